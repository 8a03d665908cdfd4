/**
 * The turn loop: composes the session lease, fenced appends (./appends.ts), the run record,
 * the agent's model loop (./modelLoop.ts: model requests by ./modelRequest.ts, streamed by
 * ./modelStream.ts), outcome grading (./outcome.ts), tool dispatch under
 * permission policies (../tools/permissions.ts, run by ../tools/executor.ts; MCP by
 * ../tools/mcp.ts), stop reasons and error events (./events.ts), interrupts (./control.ts), crash
 * recovery (./recovery.ts). A self_hosted session's tools run in the customer's worker
 * (../tools/selfHosted.ts).
 */
import {
  newId,
  PREFIX,
  remainderIdle,
  StaleLeaseError,
  sleep,
  nowIso,
  type Lease,
  type Logger,
  type SessionDoc,
  type ConsumerHandle,
  type SandboxManager,
} from '@agentfleet/core';
import type { CommandEnvelope } from '@agentfleet/schemas';
import type { TurnServices } from '../services.js';
import { requiresAction, turnInputReady } from './input.js';
import { ToolExecutor } from '../tools/executor.js';
import { McpTurn } from '../tools/mcp.js';
import { sessionError, TurnAborted, type TurnEnd } from './events.js';
import {
  lastResponseFinished,
  reconciliationDrafts,
  recoveryScan,
  type RecoveryCursor,
} from './recovery.js';
import { SelfHostedLane } from '../tools/selfHosted.js';
import { finishTurn, markProcessed, type TurnFinishDeps } from './finish.js';
import { evaluateOutcome, outcomeToJudge } from './outcome.js';
import { SessionLogCache } from './sessionLogCache.js';
import { TurnControl } from './control.js';
import { SessionAppends } from './appends.js';
import { PendingQueue } from './pending.js';
import { modelLoop, type ModelLoopDeps } from './modelLoop.js';
import { Wakeups, type OrphanRun } from './wakeup.js';
import { Coordinator, threadReply, withCoordinatorTools } from './threads.js';

/**
 * Runs session turns. Guarantees: one turn per session at a time (session lease, fenced
 * appends); a turn's input is every user message appended since the last turn but those an
 * interrupt cancelled (./pending.ts), in order; every turn ends with exactly one
 * session.status_idle; a redelivered command appends nothing when its input was already
 * processed; a turn orphaned by a crashed worker is resumed by the next one (after more than 5
 * recoveries the session is forced idle). Proven by test/e2e/{sdk/sdk-flow,
 * sessions/sessions-events, sandbox/sandbox-tools, server/crash-recovery, turns/pending-queue*}.
 */
export class TurnRunner {
  private consumer: ConsumerHandle | null = null;
  private scanTimer: NodeJS.Timeout | null = null;
  private offAppended?: () => void;
  private readonly running = new Set<Promise<void>>();
  private readonly draining = new Set<string>();
  /** Where this worker's next recovery scan resumes (./recovery.ts RecoveryCursor). */
  private readonly scanCursor: RecoveryCursor = {};
  /** Each drain's control channel subscription (./control.ts). */
  private readonly controls = new Map<string, TurnControl>();

  constructor(
    private readonly p: TurnServices,
    private readonly owner: string,
    private readonly log: Logger,
    private readonly tools: ToolExecutor = new ToolExecutor({ sandbox: null, web: null }),
    private readonly sandbox: SandboxManager | null = null,
    /** The session logs this worker read (./sessionLogCache.ts): a turn reads only new events. */
    private readonly logs: SessionLogCache = new SessionLogCache(p.events),
  ) {
    this.appends = new SessionAppends(p.events);
    this.queue = new PendingQueue(p.events, this.appends, logs, p.sessions.turns);
    this.ending = { p, sandbox, log, appends: this.appends };
    this.loopDeps = { p, appends: this.appends, logs, tools, sandbox };
  }
  private readonly appends: SessionAppends;
  /** The pending-message queue's promotions and cancellations (./pending.ts). */
  private readonly queue: PendingQueue;
  private readonly ending: TurnFinishDeps;
  private readonly loopDeps: ModelLoopDeps;
  private readonly wakeups = new Wakeups(); // recovery's span.wakeup_scheduled (./wakeup.ts)

  async start(): Promise<void> {
    // Events appended in this process (the turns' own, and the gateway's input when it runs
    // here too) extend the log cache as they are written, so a turn reads from the store only
    // what another process appended (./sessionLogCache.ts `appended`). Removed once the
    // running turns are done (stop).
    this.offAppended ??= this.p.events.onAppended(async (tenant, sid, written) =>
      this.logs.appended(tenant, sid, written),
    );
    this.consumer = await this.p.bus.consume('turn-runner', {
      'session.turn.requested': (cmd) => this.handle(cmd),
      'session.cancel.requested': async () => {},
    });
    const scan = () =>
      this.recoveryScan().catch((err) =>
        this.log.error('recovery scan failed', { err: String(err) }),
      );
    void scan();
    this.scanTimer = setInterval(scan, this.p.config.turn.recoveryScanMs);
    this.scanTimer.unref();
  }

  /** Stops taking commands, then waits (bounded) for running turns; an abandoned turn is recovered elsewhere. */
  async stop(drainMs = 30_000): Promise<void> {
    if (this.scanTimer) clearInterval(this.scanTimer);
    await this.consumer?.stop();
    const all = Promise.allSettled([...this.running]);
    await Promise.race([all, sleep(drainMs)]);
    this.offAppended?.();
    this.offAppended = undefined;
  }

  /**
   * Command handler. It only claims the session (lease) and hands the session to a background
   * drain, so a long turn never holds a bus partition and other sessions on that partition keep
   * moving. Acknowledging early is safe: input that no turn has consumed keeps the session's
   * `pending` flag and a started turn has a run record; the recovery scan re-drives both.
   * At most `config.turn.maxConcurrent` sessions run per worker; beyond that the handler waits
   * (backpressure on the partition) instead of acknowledging work it cannot start.
   */
  async handle(cmd: CommandEnvelope<'session.turn.requested'>): Promise<void> {
    const { tenant_id: tenant, session_id: sid } = cmd.payload;
    if (this.draining.has(sid)) return; // this worker's drain re-checks pending input before it lets go
    while (this.running.size >= this.p.config.turn.maxConcurrent) await Promise.race(this.running);
    const lease = await this.p.coordination.leases.acquire(
      `session:${sid}`,
      this.owner,
      this.p.config.turn.leaseTtlMs,
    );
    if (!lease) return; // the holder drains all pending input and re-checks after releasing
    this.wakeups.arm(sid, cmd);
    let failed = false;
    const run = this.runSession(tenant, sid, lease).catch((err) => {
      failed = true; // left to the recovery scan, so a persistent fault cannot spin here
      this.log.error('session drain failed', {
        session_id: sid,
        err: String((err as Error)?.stack ?? err),
      });
    });
    this.running.add(run);
    this.draining.add(sid);
    void run.finally(async () => {
      this.running.delete(run);
      this.draining.delete(sid);
      // Input that arrived after the drain's last check (its command skipped while this drain
      // was letting go, or sent before the release): still pending, taken now.
      const s = await this.p.sessions.turns.session(tenant, sid).catch(() => null);
      if (!failed && s?.pending && !s.terminated_at && !s.deleted_at)
        void this.handle(cmd).catch((err) =>
          this.log.error('re-drive failed', { session_id: sid, err: String(err) }),
        );
    });
  }

  /**
   * Drains the session under one lease. Input that arrived after the drain's last check but
   * before the release is taken by `handle`'s re-check once this returns (one session read).
   */
  private async runSession(tenant: string, sid: string, held: Lease): Promise<void> {
    let control: TurnControl | undefined;
    const renew = setInterval(
      () => {
        this.p.coordination.leases.renew(held, this.p.config.turn.leaseTtlMs).then(
          (ok) => {
            if (!ok) control?.abortTurn(new TurnAborted('lease_lost'));
          },
          () => {},
        );
      },
      Math.max(250, Math.floor(this.p.config.turn.leaseTtlMs / 3)),
    );
    try {
      control = await TurnControl.open(this.p.coordination.pubsub, sid);
      this.controls.set(sid, control);
      await this.drain(tenant, sid, held);
    } catch (err) {
      if (err instanceof StaleLeaseError) return;
      throw err;
    } finally {
      clearInterval(renew);
      this.appends.forget(sid);
      this.wakeups.forget(sid);
      this.controls.delete(sid);
      await control
        ?.close()
        .catch((err) => this.log.warn('unsubscribe failed', { err: String(err) }));
      await this.p.coordination.leases.release(held);
    }
  }

  private async drain(tenant: string, sid: string, lease: Lease): Promise<void> {
    const { turns } = this.p.sessions;
    // The fence moves before anything is read; the document it answers is the first read.
    let fenced: Promise<SessionDoc | null> | null = this.p.turnState.fence(
      tenant,
      sid,
      lease.token,
    );
    for (;;) {
      const [s, orphan] = await Promise.all([
        fenced ?? turns.session(tenant, sid),
        turns.run(tenant, sid),
      ]);
      fenced = null;
      if (!s || s.deleted_at || s.terminated_at) {
        this.logs.forget(tenant, sid);
        await turns.endRun(tenant, sid);
        return;
      }
      if (orphan) {
        await this.recover(tenant, s, orphan, lease);
        continue;
      }
      if (!s.pending || s.input_seq <= s.processed_seq) {
        if (s.pending) await this.p.turnState.clearStalePending(tenant, sid, s.input_seq);
        return;
      }
      // A turn that ended with no newer input (pending cleared, run record gone) ends the drain.
      if (await this.runTurn(tenant, s, lease)) return;
    }
  }

  /** True when the turn ended and no input arrived meanwhile (nothing left to drain). */
  private async runTurn(tenant: string, s: SessionDoc, lease: Lease): Promise<boolean> {
    const inputTo = s.input_seq;
    // Input older than the newest interrupt was cancelled by it.
    const interruptSeq = s.interrupt_seq ?? 0;
    const log = await this.queue.cancel(tenant, s, lease);
    const input = turnInputReady(log, s, inputTo, interruptSeq);
    if (!input.ready) {
      // Some calls answered, not all: the idle is re-emitted with the remainder (SDK).
      if (input.remaining.length)
        await this.appends.append(
          tenant,
          s._id,
          lease,
          [requiresAction(input.remaining)],
          (idleSeq) => remainderIdle(inputTo, idleSeq),
        );
      await markProcessed(this.p, tenant, s._id, inputTo);
      return false;
    }
    const startSeq = s.last_seq + 1;
    // The run record and session.status_running are issued together, the record first (each
    // store applies a caller's writes in call order), so a started turn always has its record.
    const record = this.p.sessions.turns.startRun(tenant, s._id, {
      run_id: newId(PREFIX.run),
      owner: this.owner,
      token: lease.token,
      start_seq: startSeq,
      input_to: inputTo,
      started_at: nowIso(),
    });
    const running = this.appends.append(tenant, s._id, lease, [
      { type: 'session.status_running', payload: {} },
      ...this.wakeups.pendingInput(s), // a recovery scan's command woke it (./wakeup.ts)
    ]);
    const [, [started]] = await Promise.all([record, running]);
    await this.queue.promote(tenant, s._id, lease, started!.seq);
    this.p.metrics.turnsStarted.inc();
    return this.loop(tenant, s, lease, inputTo, interruptSeq);
  }

  /** The agent loop; ends the turn with one session.status_idle. True: see `finish`. */
  private async loop(
    tenant: string,
    s: SessionDoc,
    lease: Lease,
    inputTo: number,
    interruptSeq: number,
    /** A recovered turn whose answer was already finished: judge it before asking again. */
    answered = false,
  ): Promise<boolean> {
    const sid = s._id;
    const abort = new AbortController();
    // The drain's control subscription predates its session read (./control.ts).
    const control = this.controls.get(sid)!;
    control.register(abort, interruptSeq);
    let end: TurnEnd = { stop_reason: { type: 'end_turn' } };
    // The agent's MCP servers: connected on first need, closed with the turn.
    const append = this.appends.fenced(tenant, sid, lease);
    const sandbox = SelfHostedLane.of(s) ? null : this.sandbox; // the worker is the sandbox
    const mcp = new McpTurn(this.p, sandbox, s, append, this.log, abort.signal);
    try {
      end = await this.workAndJudge(tenant, s, lease, abort.signal, mcp, inputTo, answered);
    } catch (err) {
      const reason = abort.signal.aborted
        ? (abort.signal.reason as TurnAborted)?.reason
        : undefined;
      if (reason === 'lease_lost' || err instanceof StaleLeaseError)
        throw new StaleLeaseError('lease lost mid-turn');
      if (reason === 'terminated') return false;
      if (reason === 'interrupt') end = { stop_reason: { type: 'end_turn' }, interrupted: true };
      else {
        this.log.error('turn failed', {
          session_id: sid,
          err: String((err as Error)?.stack ?? err),
        });
        await this.appends.append(tenant, sid, lease, [
          sessionError('unknown_error', 'the turn failed unexpectedly', 'terminal'),
        ]);
      }
    } finally {
      control.unregister(abort);
      await mcp.close();
    }
    if (end.interrupted) await this.queue.cancelAtInterrupt(tenant, sid, lease);
    return this.finish(tenant, s, lease, inputTo, end, s);
  }

  /** Ends the turn (./finish.ts); a child thread's idle carries its reply (./threads.ts). */
  private async finish(
    tenant: string,
    s: SessionDoc,
    lease: Lease,
    inputTo: number,
    end: TurnEnd,
    started?: SessionDoc,
  ): Promise<boolean> {
    const log = s.thread ? await this.logs.all(tenant, s._id, this.appends.lastSeq(s._id)) : [];
    const reply = threadReply(s, [...log, ...(end.held?.drafts ?? [])], end);
    return finishTurn(
      this.ending,
      tenant,
      s._id,
      lease,
      inputTo,
      end,
      started,
      reply ? [reply] : [],
    );
  }

  /**
   * The agent's work, then, with an outcome to judge, the grader's cycles (./outcome.ts): a
   * revision runs the model loop again, the grader's explanation its next user message. A turn
   * recovered while its outcome was `evaluating`, or after the agent's answer was finished,
   * judges that answer before the agent is asked anything.
   */
  private async workAndJudge(
    tenant: string,
    s: SessionDoc,
    lease: Lease,
    signal: AbortSignal,
    mcp: McpTurn,
    inputTo: number,
    answered: boolean,
  ): Promise<TurnEnd> {
    const sid = s._id;
    const append = this.appends.fenced(tenant, sid, lease);
    const readLog = () => this.logs.all(tenant, sid, this.appends.lastSeq(sid));
    // A coordinator's primary thread: its thread tools, and the wait for its threads' replies.
    const coordinator = s.roster ? new Coordinator(this.p, tenant, s, append) : undefined;
    const work = async (current: SessionDoc) =>
      modelLoop(
        this.loopDeps,
        tenant,
        withCoordinatorTools(current),
        lease,
        signal,
        mcp,
        inputTo,
        coordinator,
      );
    // Outcomes are judged only from the turn's input: one defined later has a later seq, so a
    // turn that starts without one to judge never reads the session again for it.
    const judging = outcomeToJudge(s, inputTo);
    let end: TurnEnd =
      answered || judging?.result === 'evaluating'
        ? { stop_reason: { type: 'end_turn' } }
        : await work(s);
    // The turn goes on while the coordinator's threads work: each delivery asks the model again.
    while (coordinator && end.stop_reason.type === 'end_turn' && !end.interrupted) {
      if (end.held) {
        await append(end.held.drafts, end.held.update); // the answer precedes the replies
        end = { stop_reason: end.stop_reason };
      }
      if (!(await coordinator.awaitReplies(signal))) break;
      end = await work((await this.p.sessions.turns.session(tenant, sid)) ?? s);
    }
    if (!judging) return end;
    for (;;) {
      if (end.stop_reason.type !== 'end_turn' || end.interrupted) return end;
      const current = await this.p.sessions.turns.session(tenant, sid);
      const o = outcomeToJudge(current, inputTo);
      if (!o || !current) return end;
      // The judged answer is in the log before the grader reads it.
      if (end.held) {
        await append(end.held.drafts, end.held.update);
        end = { stop_reason: end.stop_reason };
      }
      const next = await evaluateOutcome(
        this.p,
        tenant,
        current,
        o,
        append,
        readLog,
        signal,
        this.log,
        SelfHostedLane.of(current) ? null : this.sandbox,
      );
      if (next === 'done') return end;
      const revising = (await this.p.sessions.turns.session(tenant, sid)) ?? current;
      end = await work(revising);
    }
  }

  /**
   * Resumes a turn whose worker died: reconciles an interrupted model stream or orphan tool
   * calls (session.warning), then continues the loop; more than 5 recoveries forces idle.
   */
  private async recover(tenant: string, s: SessionDoc, run: OrphanRun, lease: Lease) {
    const [sid, inputTo] = [s._id, run.input_to];
    const recoveries = s.recoveries + 1;
    this.log.warn('recovering orphaned turn', { session_id: sid, recoveries });
    this.p.metrics.turnRecoveries.inc();
    const turn = await this.queue.recovered(tenant, s, lease, run.start_seq); // ./pending.ts
    if (turn.some((e) => e.type === 'session.status_idle')) {
      await markProcessed(this.p, tenant, sid, inputTo);
      await this.p.sessions.turns.endRun(tenant, sid);
      return;
    }
    if (recoveries > this.p.config.turn.maxRecoveries) {
      await this.finish(tenant, s, lease, inputTo, { stop_reason: { type: 'retries_exhausted' } });
      return;
    }
    await this.p.turnState.countRecovery(tenant, sid, recoveries);
    await this.p.sessions.turns.adoptRun(tenant, sid, this.owner, lease.token);
    if (s.thread) await this.threadRescheduled(tenant, s); // cross-posted to the primary
    const drafts = reconciliationDrafts(turn, SelfHostedLane.of(s));
    await this.queue.resume(tenant, sid, lease, [this.wakeups.orphaned(sid, run), ...drafts]);
    const done = lastResponseFinished(turn);
    const current = (await this.p.sessions.turns.session(tenant, sid))!;
    // A finished answer ends the turn, unless an outcome still has to judge it or a
    // coordinator's threads still work (./threads.ts).
    if (done && !outcomeToJudge(current, inputTo) && !current.roster) {
      await this.finish(tenant, current, lease, inputTo, { stop_reason: { type: 'end_turn' } });
      return;
    }
    await this.loop(tenant, current, lease, inputTo, s.interrupt_seq ?? 0, done);
  }

  /** A child thread's recovery, on its session's primary stream (./threads.ts). */
  private async threadRescheduled(tenant: string, s: SessionDoc): Promise<void> {
    const payload = { session_thread_id: s._id, agent_name: s.thread!.agent_name };
    await this.p.events
      .append(tenant, s.thread!.session_id, [
        { type: 'session.thread_status_rescheduled', payload },
      ])
      .catch((err) => this.log.warn('thread rescheduled event failed', { err: String(err) }));
  }

  /** Re-drives orphaned runs (lease expired) and unprocessed input (e.g. a command lost in a crash). */
  async recoveryScan(): Promise<void> {
    await recoveryScan(
      this.p,
      (sid) => this.draining.has(sid), // a running turn is always inside its session's drain
      `${this.owner}:scan`,
      this.scanCursor,
    );
  }
}
