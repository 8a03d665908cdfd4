/**
 * The worker's side of eval runs: dispatching cases into free slots, starting them, judging
 * them when their session idles, and the scan that re-drives lost commands and dead workers'
 * claims. States: ./records.ts; the API: ./service.ts.
 *
 * Guarantees (test/e2e/evals/evals.test.ts, test/e2e/evals/evals-crash.test.ts):
 * - at most `concurrency` cases of a run, and at most EVAL_TENANT_CONCURRENCY cases of a
 *   tenant, are active (starting, running, judging) at once: dispatching holds the tenant's
 *   dispatch lease, counts, and moves queued cases to `starting` with a compare-and-swap;
 * - a case ends exactly once and has at most one session: its session id is fixed when it is
 *   dispatched; a worker that takes the case over finds that session (created or not, prompt
 *   sent or not) and goes on from there;
 * - a case is judged once its session goes idle after the prompt (the event-log hook
 *   `relayEvalIdles`, and the scan for idles whose command was lost); a claim on a starting or
 *   judging case is renewed while its worker lives (EVAL_CLAIM_MS) and taken over by the scan
 *   once it lapses;
 * - usage is the session's (agent and grader), cost the ledger's estimate for the session
 *   (null when the price card lacks a rate), duration from start to judged.
 */
import type { CommandBus } from '../bus/port.js';
import type { LeaseStore } from '../coordination/port.js';
import type { CostService } from '../cost/ledger.js';
import { ApiError } from '../errors.js';
import type { EventLog } from '../events/log.js';
import { onSessionIdle } from '../events/idleHook.js';
import type { FileService } from '../files/files.js';
import { newId, PREFIX } from '../ids.js';
import type { Logger } from '../log.js';
import type { SessionService } from '../sessions/sessions.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import {
  agentText,
  commandCheck,
  expectedTextCheck,
  rubricCheck,
  verdict,
  type CheckRunner,
} from './judge.js';
import {
  ACTIVE_CASE,
  FINAL_CASE,
  LIVE_RUN,
  zeroUsage,
  type EvalCaseDoc,
  type EvalCheckDoc,
  type EvalRunDoc,
} from './records.js';

/** A dispatched case whose start command has not claimed it by then is re-sent by the scan. */
const REDISPATCH_MS = 30_000;
const MAX_ATTEMPTS = 5;
const nowIso = () => new Date().toISOString();

export interface EvalDeps {
  c: Collections;
  sessions: Pick<SessionService, 'create' | 'send' | 'getDoc'>;
  files: Pick<FileService, 'content'>;
  events: Pick<EventLog, 'range'>;
  bus: Pick<CommandBus, 'publish'>;
  leases: LeaseStore;
  cost: Pick<CostService, 'report' | 'getPricing'>;
  config: {
    tenantConcurrency: number;
    caseTimeoutMs: number;
    /** A claim's time without renewal; the holder renews it every third of it. */
    claimMs: number;
    /** null: check commands can run; else why they cannot (no sandbox driver). */
    checkCommands: string | null;
  };
  log: Logger;
  now?: () => number;
}
export class EvalWork {
  private readonly owner = `evals-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  constructor(private readonly d: EvalDeps) {}
  private now() {
    return this.d.now?.() ?? Date.now();
  }

  // ---- dispatch

  /**
   * Moves queued cases to `starting` while the run's and the tenant's bounds allow, under the
   * tenant's dispatch lease, and publishes their start commands.
   */
  async dispatch(tenant: string, evalId: string): Promise<number> {
    const key = `eval-dispatch:${tenant}`;
    let lease = null;
    for (let i = 0; i < 20 && !lease; i++) {
      lease = await this.d.leases.acquire(key, this.owner, 10_000);
      if (!lease) await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
    }
    if (!lease) return 0; // another dispatcher holds it; the scan fills what is left
    const started: EvalCaseDoc[] = [];
    try {
      const run = await this.d.c.evalRuns.get(tenant, evalId);
      if (!run || !LIVE_RUN.includes(run.status)) return 0;
      const [active, tenantActive] = await Promise.all([
        this.d.c.evalCases.count(tenant, { eval_id: evalId, status: { $in: ACTIVE_CASE } }),
        this.d.c.evalCases.count(tenant, { status: { $in: ACTIVE_CASE } }),
      ]);
      let slots = Math.min(
        run.concurrency - active,
        this.d.config.tenantConcurrency - tenantActive,
      );
      while (slots-- > 0) {
        const c = await this.d.c.evalCases.findOneAndUpdate(
          tenant,
          { eval_id: evalId, status: 'queued' },
          {
            $set: {
              status: 'starting',
              dispatched_ms: this.now(),
              session_id: newId(PREFIX.session),
              updated_at: nowIso(),
            },
          },
          { sort: { index: 1 }, returnDocument: 'after' },
        );
        if (!c) break;
        started.push(c);
      }
      if (started.length && run.status === 'queued')
        await this.d.c.evalRuns.updateOne(
          tenant,
          { _id: evalId, status: 'queued' },
          { $set: { status: 'running', updated_at: nowIso() } },
        );
    } finally {
      await this.d.leases.release(lease);
    }
    for (const c of started) await this.publishStart(c);
    if (!started.length) await this.maybeEnd(tenant, evalId);
    return started.length;
  }

  private publishStart(c: EvalCaseDoc) {
    return this.d.bus
      .publish('eval.case.requested', {
        tenant_id: c.tenant_id,
        eval_id: c.eval_id,
        case_id: c._id,
      })
      .then(() => undefined)
      .catch((err) =>
        this.d.log.warn('eval case start not published; the scan re-sends it', {
          case: c._id,
          err: String(err),
        }),
      );
  }

  /** The run is completed (or failed: every case errored) once no case is open. */
  private async maybeEnd(tenant: string, evalId: string) {
    const open = await this.d.c.evalCases.count(tenant, {
      eval_id: evalId,
      status: { $nin: FINAL_CASE },
    });
    if (open) return;
    const [errored, total] = await Promise.all([
      this.d.c.evalCases.count(tenant, { eval_id: evalId, status: 'errored' }),
      this.d.c.evalCases.count(tenant, { eval_id: evalId }),
    ]);
    const at = nowIso();
    await this.d.c.evalRuns.updateOne(
      tenant,
      { _id: evalId, status: { $in: LIVE_RUN } },
      {
        $set: { status: errored === total ? 'failed' : 'completed', ended_at: at, updated_at: at },
      },
    );
  }

  // ---- the worker's steps

  /** `eval.case.requested`: claims a `starting` case, creates or finds its session, sends the prompt. */
  async startCase(tenant: string, caseId: string): Promise<void> {
    const token = newId('claim_');
    const nowMs = this.now();
    const c = await this.d.c.evalCases.findOneAndUpdate(
      tenant,
      { _id: caseId, status: 'starting', claimed_until: { $lte: nowMs } },
      {
        $set: { claim: token, claimed_until: nowMs + this.d.config.claimMs },
        $inc: { attempts: 1 },
      },
      { returnDocument: 'after' },
    );
    if (!c) return; // claimed by another worker, or no longer starting
    const hold = this.holdClaim(c, token);
    try {
      await this.start(tenant, c, token);
    } finally {
      hold();
    }
  }

  /** Renews the claim every third of its time until the returned stop is called. */
  private holdClaim(c: EvalCaseDoc, token: string): () => void {
    const every = Math.max(250, Math.floor(this.d.config.claimMs / 3));
    const timer = setInterval(() => {
      this.d.c.evalCases
        .updateOne(
          c.tenant_id,
          { _id: c._id, claim: token },
          { $set: { claimed_until: this.now() + this.d.config.claimMs } },
        )
        .catch((err) =>
          this.d.log.warn('eval claim not renewed', { case: c._id, err: String(err) }),
        );
    }, every);
    timer.unref();
    return () => clearInterval(timer);
  }

  private async start(tenant: string, c: EvalCaseDoc, token: string): Promise<void> {
    const run = await this.d.c.evalRuns.get(tenant, c.eval_id);
    if (!run || !LIVE_RUN.includes(run.status)) return;
    if (c.attempts > MAX_ATTEMPTS)
      return this.endCase(c, token, 'starting', {
        status: 'errored',
        reason: `the case could not be started in ${MAX_ATTEMPTS} attempts`,
      });
    let inputSeq: number;
    try {
      inputSeq = await this.openSession(tenant, run, c);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 429) throw err;
      // The session API refused (agent archived, environment gone, budget): retrying cannot help.
      return this.endCase(c, token, 'starting', {
        status: 'errored',
        reason: `the session could not be created: ${err.message}`,
      });
    }
    await this.d.c.evalCases.updateOne(
      tenant,
      { _id: c._id, claim: token, status: 'starting' },
      {
        $set: {
          status: 'running',
          prompt_seq: inputSeq,
          started_at: c.started_at ?? nowIso(),
          claim: null,
          claimed_until: 0,
          updated_at: nowIso(),
        },
      },
    );
  }

  /** The case's session (created with its fixed id, or found), the prompt sent once: its input_seq. */
  private async openSession(tenant: string, run: EvalRunDoc, c: EvalCaseDoc): Promise<number> {
    const prompt = c.rubric
      ? {
          type: 'user.define_outcome',
          description: c.prompt,
          rubric: { type: 'text', content: c.rubric },
          max_iterations: 1,
        }
      : { type: 'user.message', content: [{ type: 'text', text: c.prompt }] };
    try {
      await this.d.sessions.create(
        tenant,
        {
          agent: { type: 'agent', id: run.agent.id, version: run.agent.version },
          environment_id: run.environment_id,
          title: `eval ${run.name ?? run._id}: ${c.case_id}`.slice(0, 200),
          metadata: { eval_id: run._id, eval_case: c.case_id.slice(0, 64) },
        } as never,
        { id: c.session_id! },
      );
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err; // created by an earlier attempt
    }
    let s = await this.d.sessions.getDoc(tenant, c.session_id!);
    if (s.input_seq === 0) {
      await this.d.sessions.send(tenant, s._id, [prompt] as never);
      s = await this.d.sessions.getDoc(tenant, s._id);
    }
    return s.input_seq;
  }

  /** Ends a claimed case (compare-and-swap on the claim) and dispatches the next. */
  private async endCase(
    c: EvalCaseDoc,
    token: string,
    from: EvalCaseDoc['status'],
    set: Partial<EvalCaseDoc>,
  ) {
    const at = nowIso();
    const ended = await this.d.c.evalCases.updateOne(
      c.tenant_id,
      { _id: c._id, claim: token, status: from },
      { $set: { ...set, claim: null, claimed_until: 0, ended_at: at, updated_at: at } },
    );
    if (ended.matched) await this.dispatch(c.tenant_id, c.eval_id);
  }

  /** `eval.case.finished`: the session idled at `seq`; judges the case once. */
  async finishCase(tenant: string, caseId: string, seq: number, run: CheckRunner | null) {
    const c = await this.d.c.evalCases.get(tenant, caseId);
    if (!c || c.status !== 'running' || c.prompt_seq === null || seq <= c.prompt_seq) return;
    const token = newId('claim_');
    const claimed = await this.d.c.evalCases.findOneAndUpdate(
      tenant,
      { _id: caseId, status: 'running' },
      {
        $set: {
          status: 'judging',
          claim: token,
          claimed_until: this.now() + this.d.config.claimMs,
        },
      },
      { returnDocument: 'after' },
    );
    if (!claimed) return;
    const hold = this.holdClaim(claimed, token);
    try {
      await this.judge(tenant, c, claimed, token, run);
    } finally {
      hold();
    }
  }

  private async judge(
    tenant: string,
    c: EvalCaseDoc,
    claimed: EvalCaseDoc,
    token: string,
    run: CheckRunner | null,
  ) {
    const session = await this.d.sessions.getDoc(tenant, c.session_id!);
    const checks: EvalCheckDoc[] = [];
    if (c.rubric) checks.push(rubricCheck(session));
    if (c.check_command) checks.push(await commandCheck(run, claimed, session));
    if (c.expected_text) {
      const events = await this.d.events.range(tenant, session._id, c.prompt_seq!, 100_000);
      checks.push(expectedTextCheck(c.expected_text, agentText(events)));
    }
    const v = verdict(checks);
    const endMs = this.now();
    await this.endCase(claimed, token, 'judging', {
      status: 'completed',
      ...v,
      checks,
      usage: { ...zeroUsage(), ...session.usage },
      cost: await this.sessionCost(tenant, session._id, session.created_at),
      duration_ms: c.started_at ? Math.max(0, endMs - Date.parse(c.started_at)) : null,
    });
  }

  private async sessionCost(tenant: string, sessionId: string, since: string) {
    try {
      const r = await this.d.cost.report({
        starting_at: new Date(Date.parse(since) - 3_600_000).toISOString(),
        tenant_id: tenant,
        session_id: sessionId,
        group_by: 'session',
      });
      return (r as { total_estimated_cost: number | null }).total_estimated_cost;
    } catch (err) {
      this.d.log.warn('eval case cost not read', { session: sessionId, err: String(err) });
      return null;
    }
  }

  // ---- the scan

  /**
   * Every EVAL_SCAN_MS on each worker: re-sends start commands that were lost or whose claim
   * expired, hands judging cases of dead workers to another, judges cases whose idle command was
   * lost, ends cases past EVAL_CASE_TIMEOUT_MS, and fills free slots of live runs.
   */
  async sweep(check: CheckRunner | null): Promise<void> {
    const nowMs = this.now();
    const open = await this.d.c.evalCases.scanAll(
      { status: { $in: ACTIVE_CASE } },
      { sort: { updated_at: 1 }, limit: 500 },
    );
    const runs = new Map<string, string>();
    for (const c of open) {
      runs.set(c.eval_id, c.tenant_id);
      if (c.status === 'starting') {
        if (c.claimed_until <= nowMs && c.dispatched_ms + REDISPATCH_MS <= nowMs)
          await this.startCase(c.tenant_id, c._id);
      } else if (c.status === 'judging') {
        if (c.claimed_until <= nowMs)
          await this.d.c.evalCases.updateOne(
            c.tenant_id,
            { _id: c._id, status: 'judging', claim: c.claim },
            { $set: { status: 'running', claim: null, claimed_until: 0 } },
          );
      } else await this.checkRunning(c, nowMs, check);
    }
    const live = await this.d.c.evalRuns.scanAll({ status: { $in: LIVE_RUN } }, { limit: 200 });
    for (const r of live) runs.set(r._id, r.tenant_id);
    for (const [evalId, tenant] of runs) await this.dispatch(tenant, evalId);
  }

  /** Ends a running case from the scan (its session is gone, or it ran too long): claim, then end. */
  private async endRunning(c: EvalCaseDoc, set: Partial<EvalCaseDoc>) {
    const token = newId('claim_');
    const claimed = await this.d.c.evalCases.updateOne(
      c.tenant_id,
      { _id: c._id, status: 'running' },
      { $set: { claim: token } },
    );
    if (claimed.matched) await this.endCase({ ...c, claim: token }, token, 'running', set);
  }

  private async checkRunning(c: EvalCaseDoc, nowMs: number, check: CheckRunner | null) {
    const s = await this.d.sessions.getDoc(c.tenant_id, c.session_id!).catch(() => null);
    if (!s || s.terminated_at)
      return this.endRunning(c, {
        status: 'errored',
        reason: s ? 'the session was terminated' : 'the session was deleted',
      });
    if ((s.idle_seq ?? 0) > (c.prompt_seq ?? Infinity))
      return this.finishCase(c.tenant_id, c._id, s.idle_seq!, check);
    if (c.started_at && Date.parse(c.started_at) + this.d.config.caseTimeoutMs <= nowMs) {
      await this.d.sessions.send(c.tenant_id, s._id, [{ type: 'user.interrupt' }] as never);
      await this.endRunning(c, {
        status: 'errored',
        reason: `timed out after ${Math.round(this.d.config.caseTimeoutMs / 1000)} s`,
        usage: { ...zeroUsage(), ...s.usage },
        cost: await this.sessionCost(c.tenant_id, s._id, s.created_at),
      });
    }
  }
}

/**
 * The event-log hook: a `session.status_idle` of a running eval case's session publishes
 * `eval.case.finished`. Runs after the events are durable, in whichever process appended.
 */
export function relayEvalIdles(
  events: Pick<EventLog, 'onAppended'>,
  c: Collections,
  bus: Pick<CommandBus, 'publish'>,
  log: Logger,
): void {
  onSessionIdle(events, async (tenant, sessionId, idle) => {
    const kase = await c.evalCases.findOne(tenant, { session_id: sessionId, status: 'running' });
    if (!kase) return;
    try {
      await bus.publish(
        'eval.case.finished',
        { tenant_id: tenant, eval_id: kase.eval_id, case_id: kase._id, seq: idle.seq },
        { id: `evalfin:${idle._id}` },
      );
    } catch (err) {
      log.error('eval case end not published; the scan judges it', {
        session: sessionId,
        err: String(err),
      });
    }
  });
}
