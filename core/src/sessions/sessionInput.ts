/**
 * Input to a session: `send` (POST …/events, POST …/messages, initial_events, a deployment's
 * fire) and `cancel`, and the interrupt signal they and delete publish to the worker that runs
 * the turn. `SessionService.send` / `.cancel` read the session and call it.
 *
 * Guarantees:
 * - a terminated or archived session accepts no input (a 400 naming `session`);
 * - every event is checked before any is written (./inputEvents.ts, ./toolConfirmation.ts, the
 *   outcome's rubric), so a bad batch writes nothing;
 * - the events are durable in the log (events/log.ts), in request order, before it answers; the
 *   turn-state update travels in the same write (./turnState.ts `inputAppended`), and the
 *   pending-queue markers (./pendingQueue.ts) and `extra` drafts (a scheduled fire's wake,
 *   ./wakeup.ts) go in the same append after them, so the request's seqs are unchanged;
 * - input other than interrupts requests a turn (and a new Work item for a self_hosted session
 *   whose item stopped); a lost turn command is re-driven by the recovery scan;
 * - an interrupt (the batch's last, or a cancel: `source: 'cancel'`) is published live on the
 *   session's control channel as well as written to the log; in a coordinator session one
 *   naming a child thread's `session_thread_id` interrupts that thread only (the primary's turn
 *   goes on), one without interrupts the primary and every busy child thread
 *   (test/e2e/threads/threads.test.ts).
 * Proved by test/e2e/sessions/sessions-events.test.ts, test/e2e/turns/recovery-scan.test.ts,
 * test/e2e/turns/pending-queue.test.ts and test/e2e/turns/wakeup-scheduled.test.ts.
 */
import type { InputEvent } from '@agentfleet/schemas';
import { prepareOutcome, withOutcomeState, type RubricFileReader } from '../outcomes/index.js';
import { invalid } from '../errors.js';
import type { CommandBus } from '../bus/port.js';
import type { PubSub } from '../coordination/port.js';
import type { Collections } from '../store/collections.js';
import { controlChannel, type EventDraft, type EventLog } from '../events/log.js';
import type { SessionDoc } from './records.js';
import { checkInputEvents, checkToolResults } from './inputEvents.js';
import { checkToolAnswers } from './toolConfirmation.js';
import { inputAppended, interruptAppended } from './turnState.js';
import { withPendingMarkers } from './pendingQueue.js';
import type { ThreadService } from '../threads/threads.js';
import { primaryThreadId } from '../threads/records.js';
import { routedAnswers } from '../threads/relay.js';

/** Enqueues a self_hosted session's Work item unless it has an open one (idempotent). */
export type WorkQueue = (
  tenant: string,
  session: { id: string; environment_id: string },
) => Promise<void>;

export interface InterruptSignal {
  type: 'interrupt';
  seq: number;
  reason: string;
}

/** Tells the worker running the session's turn to stop it (workers/src/turn/control.ts). */
export function publishInterrupt(pubsub: PubSub, sessionId: string, seq: number, reason: string) {
  return pubsub.publish(controlChannel(sessionId), {
    type: 'interrupt',
    seq,
    reason,
  } satisfies InterruptSignal);
}

/** The routed answers' drafts per thread, in request order. */
function groupBy(routed: ReturnType<typeof routedAnswers>): Map<string, EventDraft[]> {
  const out = new Map<string, EventDraft[]>();
  for (const r of routed.values()) out.set(r.thread, [...(out.get(r.thread) ?? []), r.draft]);
  return out;
}

export class SessionInput {
  constructor(
    private readonly c: Collections,
    private readonly log: EventLog,
    private readonly bus: CommandBus,
    private readonly pubsub: PubSub,
    /** The Work queue of self_hosted environments, once wired (SessionService.useWorkQueue). */
    private readonly workQueue: () => WorkQueue | null,
    private readonly threads: ThreadService,
  ) {}

  /** Each interrupt's child thread (by index in `events`), checked: `session_thread_id` must name a thread of `s`. */
  private async interruptTargets(tenant: string, s: SessionDoc, events: InputEvent[]) {
    const targets = new Map<number, string>();
    for (const [i, e] of events.entries()) {
      const tid = (e as { session_thread_id?: string | null }).session_thread_id;
      if (e.type !== 'user.interrupt' || !tid || tid === primaryThreadId(s._id)) continue;
      const child = await this.c.sessions.get(tenant, tid);
      if (!child || child.thread_of !== s._id)
        throw invalid(
          `events[${i}].session_thread_id`,
          `${tid} is not a thread of session ${s._id}`,
        );
      if (child.archived_at || child.terminated_at)
        throw invalid(`events[${i}].session_thread_id`, `thread ${tid} is archived`);
      targets.set(i, tid);
    }
    return targets;
  }

  /** Reads file rubrics of user.define_outcome (platform wiring: the file service). */
  rubricFiles: RubricFileReader | null = null;

  /**
   * Appends input events in order, all validated first so nothing is half-written, then
   * triggers the turn. Answers once the events are durable; if publishing the command fails,
   * the recovery sweep re-drives the unprocessed input. `extra` (a scheduled fire's wake,
   * ./wakeup.ts) goes in the same append, after the events, so their seqs are unchanged.
   */
  async send(tenant: string, s: SessionDoc, events: InputEvent[], extra: EventDraft[] = []) {
    const id = s._id;
    if (s.terminated_at)
      throw invalid('session', `session ${id} is terminated and accepts no events`);
    if (s.archived_at) throw invalid('session', `session ${id} is archived and accepts no events`);
    await checkInputEvents(this.c, tenant, events);
    const toChild = await this.interruptTargets(tenant, s, events);
    await checkToolAnswers(this.c.events, tenant, id, events);
    await checkToolResults(this.c.events, tenant, s, events);
    const outcome = await prepareOutcome(tenant, events, s.outcomes, this.rubricFiles);
    // Answers to a child thread's cross-posted calls go to that thread (core/src/threads/relay.ts).
    const routed = routedAnswers(s, events);
    const drafts = events.map(({ type, ...payload }, i) => ({
      type,
      payload: {
        ...((i === outcome?.index ? outcome.payload : payload) as Record<string, unknown>),
        ...(routed.has(i) ? { session_thread_id: routed.get(i)!.thread } : {}),
      },
    }));
    for (const [i, r] of routed) toChild.set(i, r.thread);
    const wantsTurn = events.some((e, i) => e.type !== 'user.interrupt' && !toChild.has(i));
    // The primary's own interrupts (not those of one child thread).
    const lastInterrupt = events
      .map((e, i) => (toChild.has(i) ? '' : e.type))
      .lastIndexOf('user.interrupt');
    const queued = [...(await withPendingMarkers(this.c.runs, tenant, s, drafts)), ...extra];
    const appended = await this.log.append(tenant, id, queued, {
      readSession: s,
      sessionUpdate: (_last, first) =>
        withOutcomeState(
          inputAppended(
            events.map((e, i) => ({ type: e.type, toChild: toChild.has(i) })),
            first,
          ),
          outcome,
          first,
        ),
    });
    const written = appended.slice(0, events.length); // the request's, without the markers
    if (lastInterrupt >= 0)
      await publishInterrupt(this.pubsub, id, written[lastInterrupt]!.seq, 'user.interrupt');
    // A coordinator's threads: one named, or every busy one when the whole session is interrupted.
    const children = new Set(
      [...toChild].filter(([i]) => events[i]!.type === 'user.interrupt').map(([, t]) => t),
    );
    if (lastInterrupt >= 0 && s.roster)
      for (const c of await this.threads.busyChildren(tenant, id)) children.add(c);
    if (children.size) await this.threads.interrupt(tenant, [...children]);
    for (const [thread, group] of groupBy(routed)) await this.threads.input(tenant, thread, group);
    // A self_hosted session whose Work item stopped gets a new one for a worker to claim.
    if (wantsTurn && s.environment?.kind === 'self_hosted')
      await this.workQueue()?.(tenant, { id, environment_id: s.environment_id });
    if (wantsTurn) {
      const seq = written[written.length - 1]!.seq;
      await this.bus
        .publish('session.turn.requested', { tenant_id: tenant, session_id: id, seq })
        .catch(() => {
          /* durable in the log; the recovery sweep re-drives it */
        });
    }
    return written;
  }

  /** Cancels the running turn, like an interrupt that does not come from the user. */
  async cancel(tenant: string, s: SessionDoc): Promise<void> {
    const id = s._id;
    if (s.terminated_at) throw invalid('session', `session ${id} is terminated`);
    const [ev] = await this.log.append(
      tenant,
      id,
      [{ type: 'user.interrupt', payload: { source: 'cancel' } }],
      { sessionUpdate: interruptAppended },
    );
    await publishInterrupt(this.pubsub, id, ev!.seq, 'cancel');
  }
}
