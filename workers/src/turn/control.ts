/**
 * A drain's control channel (`controlChannel(sid)`: interrupts, cancel, terminate), subscribed
 * once per drain (workers/src/turn/runner.ts runSession) instead of once per turn.
 *
 * Guarantees: the subscription is open before the drain reads the session, so every interrupt
 * is either in that read (`interrupt_seq`) or delivered here; one delivered while no turn is
 * registered is remembered, and the next turn registered with an older `interruptSeq` is
 * aborted at once (what the per-turn session re-read used to catch). A terminate aborts the
 * registered turn, and any turn registered after it. It holds the drain's running turn, so the
 * lease renewal aborts that turn through it (`abortTurn`). Proven by workers/test/turn-control.test.ts,
 * test/e2e/sessions/sessions-events.test.ts (interrupt and cancel mid-turn) and test/e2e/sdk/sdk-flow.test.ts (delete
 * mid-turn).
 */
import { controlChannel, type PubSub } from '@agentfleet/core';
import { TurnAborted } from './events.js';

export class TurnControl {
  private maxInterrupt = 0;
  private terminated = false;
  private turn: { abort: AbortController; interruptSeq: number } | null = null;

  private constructor(private readonly unsubscribe: () => Promise<void>) {}

  static async open(pubsub: PubSub, sessionId: string): Promise<TurnControl> {
    let control: TurnControl | null = null;
    const early: unknown[] = [];
    const unsubscribe = await pubsub.subscribe(controlChannel(sessionId), (m: unknown) =>
      control ? control.signal(m) : early.push(m),
    );
    control = new TurnControl(unsubscribe);
    for (const m of early) control.signal(m);
    return control;
  }

  /** Registers the running turn; aborts it at once when an interrupt newer than its input came. */
  register(abort: AbortController, interruptSeq: number): void {
    this.turn = { abort, interruptSeq };
    if (this.terminated) abort.abort(new TurnAborted('terminated'));
    else if (this.maxInterrupt > interruptSeq) abort.abort(new TurnAborted('interrupt'));
  }

  /** Aborts the registered turn, if any (the drain lost its lease); later turns are not affected. */
  abortTurn(reason: TurnAborted): void {
    this.turn?.abort.abort(reason);
  }

  /** The turn ended: signals until the next registration are only remembered. */
  unregister(abort: AbortController): void {
    if (this.turn?.abort === abort) this.turn = null;
  }

  close(): Promise<void> {
    this.turn = null;
    return this.unsubscribe();
  }

  private signal(m: unknown): void {
    const msg = m as { type?: string; seq?: number; reason?: string } | null;
    if (msg?.type !== 'interrupt') return;
    const terminated = msg.reason === 'terminated';
    if (terminated) this.terminated = true;
    else this.maxInterrupt = Math.max(this.maxInterrupt, Number(msg.seq) || 0);
    const turn = this.turn;
    if (turn && (terminated || Number(msg.seq) > turn.interruptSeq))
      turn.abort.abort(new TurnAborted(terminated ? 'terminated' : 'interrupt'));
  }
}
