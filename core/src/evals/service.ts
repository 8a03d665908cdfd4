/**
 * Eval runs: one agent version over a set of cases, each case its own session in its own
 * sandbox, run as worker jobs from the bus (group `eval-runner`). States: ./records.ts.
 *
 * Guarantees (test/e2e/evals/evals.test.ts, test/e2e/evals/evals-crash.test.ts):
 * - start checks everything before storing (agent version, environment, cases); the run and
 *   its cases are stored, then the first cases are dispatched;
 * - at most `concurrency` cases of a run, and at most EVAL_TENANT_CONCURRENCY cases of a
 *   tenant, are active (starting, running, judging) at once: dispatching holds the tenant's
 *   dispatch lease, counts, and moves queued cases to `starting` with a compare-and-swap;
 * - a case ends exactly once and has at most one session: its session id is fixed when it is
 *   dispatched; a worker that takes the case over finds that session (created or not, prompt
 *   sent or not) and goes on from there;
 * - a case is judged once its session goes idle after the prompt (the event-log hook
 *   `relayEvalIdles`, and the scan for idles whose command was lost); a worker that dies while
 *   starting or judging loses its claim after the lease and the scan hands the case to another;
 * - cancel stops what runs: queued cases are cancelled, running sessions are interrupted, a
 *   judge that finishes later changes nothing;
 * - usage is the session's (agent and grader), cost the ledger's estimate for the session
 *   (null when the price card lacks a rate), duration from start to judged.
 */
import {
  compileBody,
  EvalCreate,
  type EvalComparison,
  type EvalListQuery,
} from '@agentfleet/schemas';
import type { CommandBus } from '../bus/port.js';
import type { LeaseStore } from '../coordination/port.js';
import type { CostService } from '../cost/ledger.js';
import { ApiError, invalid, notFound } from '../errors.js';
import type { EventLog } from '../events/log.js';
import type { FileService } from '../files/files.js';
import { newId, PREFIX } from '../ids.js';
import type { Logger } from '../log.js';
import type { SessionService } from '../sessions/sessions.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import { pageById, type Page } from '../api/pagination.js';
import { normalizeCases, parseJsonlCases } from './cases.js';
import { compareRuns } from './compare.js';
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
  renderRun,
  zeroUsage,
  type EvalCaseDoc,
  type EvalCheckDoc,
  type EvalRunDoc,
  type RenderedRun,
} from './records.js';

const START_LEASE_MS = 60_000;
const JUDGE_LEASE_MS = 5 * 60_000;
/** A dispatched case whose start command has not claimed it by then is re-sent by the scan. */
const REDISPATCH_MS = 30_000;
const MAX_ATTEMPTS = 5;
const checkCreate = compileBody(EvalCreate);
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
    /** null: check commands can run; else why they cannot (no sandbox driver). */
    checkCommands: string | null;
  };
  log: Logger;
  now?: () => number;
}

export class EvalService {
  private readonly owner = `evals-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  constructor(private readonly d: EvalDeps) {}
  private now() {
    return this.d.now?.() ?? Date.now();
  }

  // ---- the API

  async create(tenant: string, body: unknown): Promise<RenderedRun> {
    const b = checkCreate(body ?? {});
    if (!!b.cases === !!b.cases_file_id)
      throw invalid('cases', 'give either cases or cases_file_id');
    const ref = typeof b.agent === 'string' ? { id: b.agent } : b.agent;
    const agent = await this.d.c.agents.get(tenant, ref.id);
    if (!agent) throw invalid('agent', `agent ${ref.id} not found`);
    if (agent.archived_at) throw invalid('agent', `agent ${ref.id} is archived`);
    const version = ref.version ?? agent.version;
    if (version > agent.version)
      throw invalid('agent.version', `agent ${ref.id} has no version ${version}`);
    const env = await this.d.c.environments.get(tenant, b.environment_id);
    if (!env || env.archived_at)
      throw invalid('environment_id', `environment ${b.environment_id} not found`);
    const noChecks =
      env.kind === 'self_hosted'
        ? 'the environment is self_hosted (its sandbox is not the platform’s)'
        : this.d.config.checkCommands;
    const cases = b.cases_file_id
      ? normalizeCases(
          parseJsonlCases((await this.d.files.content(tenant, b.cases_file_id)).data),
          'cases_file_id',
          noChecks,
        )
      : normalizeCases(b.cases!, 'cases', noChecks);
    const at = nowIso();
    const run: EvalRunDoc = {
      _id: newId('eval_'),
      tenant_id: tenant,
      name: b.name ?? null,
      status: 'queued',
      agent: { id: ref.id, version },
      environment_id: env._id,
      concurrency: b.concurrency ?? 4,
      total: cases.length,
      created_at: at,
      updated_at: at,
      ended_at: null,
    };
    const docs: EvalCaseDoc[] = cases.map((c, index) => ({
      _id: `${run._id}/${index}`,
      tenant_id: tenant,
      eval_id: run._id,
      index,
      ...c,
      status: 'queued',
      claim: null,
      claimed_until: 0,
      dispatched_ms: 0,
      attempts: 0,
      session_id: null,
      input_seq: null,
      started_at: null,
      ended_at: null,
      passed: null,
      score: null,
      reason: null,
      checks: [],
      usage: zeroUsage(),
      cost: null,
      duration_ms: null,
      updated_at: at,
    }));
    // Cases first: a run is never visible without its cases.
    await this.d.c.evalCases.insertMany(tenant, docs);
    await this.d.c.evalRuns.insert(tenant, run);
    await this.dispatch(tenant, run._id).catch((err) =>
      this.d.log.warn('eval dispatch failed; the scan retries', {
        eval: run._id,
        err: String(err),
      }),
    );
    return this.get(tenant, run._id);
  }

  private async runDoc(tenant: string, id: string): Promise<EvalRunDoc> {
    const r = await this.d.c.evalRuns.get(tenant, id);
    if (!r) throw notFound('eval run', id);
    return r;
  }

  private cases(tenant: string, evalId: string) {
    return this.d.c.evalCases.find(tenant, { eval_id: evalId }, { sort: { index: 1 } });
  }

  /** The price card's currency: what case costs are in. */
  private async currency(): Promise<string> {
    return (await this.d.cost.getPricing()).currency;
  }

  async get(tenant: string, id: string): Promise<RenderedRun> {
    const [run, cases] = await Promise.all([this.runDoc(tenant, id), this.cases(tenant, id)]);
    return renderRun(run, cases, await this.currency());
  }

  async list(tenant: string, q: EvalListQuery): Promise<Page<RenderedRun>> {
    const page = await pageById(
      this.d.c.evalRuns,
      tenant,
      q.agent_id ? { 'agent.id': q.agent_id } : {},
      q,
    );
    const currency = await this.currency();
    const data = await Promise.all(
      page.data.map(async (r) => renderRun(r, await this.cases(tenant, r._id), currency)),
    );
    return { ...page, data };
  }

  async compare(tenant: string, id: string, other: unknown): Promise<EvalComparison> {
    if (typeof other !== 'string' || !other) throw invalid('with', 'is required (an eval run id)');
    const [a, b] = await Promise.all([this.get(tenant, id), this.get(tenant, other)]);
    return compareRuns(a, b);
  }

  /** queued/running → cancelled: queued cases cancelled, running sessions interrupted. */
  async cancel(tenant: string, id: string): Promise<RenderedRun> {
    const at = nowIso();
    const run = await this.d.c.evalRuns.findOneAndUpdate(
      tenant,
      { _id: id, status: { $in: LIVE_RUN } },
      { $set: { status: 'cancelled', ended_at: at, updated_at: at } },
      { returnDocument: 'after' },
    );
    if (!run) await this.runDoc(tenant, id); // 404, or already final: unchanged
    const open = await this.d.c.evalCases.find(tenant, {
      eval_id: id,
      status: { $nin: FINAL_CASE },
    });
    for (const c of open) {
      const was = await this.d.c.evalCases.findOneAndUpdate(
        tenant,
        { _id: c._id, status: c.status },
        {
          $set: {
            status: 'cancelled',
            claim: null,
            claimed_until: 0,
            ended_at: at,
            updated_at: at,
          },
        },
      );
      if (was?.session_id && was.status !== 'queued')
        await this.d.sessions
          .send(tenant, was.session_id, [{ type: 'user.interrupt' }] as never)
          .catch(() => {}); // never created, or already gone: nothing runs
    }
    return this.get(tenant, id);
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
      { $set: { claim: token, claimed_until: nowMs + START_LEASE_MS }, $inc: { attempts: 1 } },
      { returnDocument: 'after' },
    );
    if (!c) return; // claimed by another worker, or no longer starting
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
          input_seq: inputSeq,
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
    if (!c || c.status !== 'running' || c.input_seq === null || seq <= c.input_seq) return;
    const token = newId('claim_');
    const claimed = await this.d.c.evalCases.findOneAndUpdate(
      tenant,
      { _id: caseId, status: 'running' },
      { $set: { status: 'judging', claim: token, claimed_until: this.now() + JUDGE_LEASE_MS } },
      { returnDocument: 'after' },
    );
    if (!claimed) return;
    const session = await this.d.sessions.getDoc(tenant, c.session_id!);
    const checks: EvalCheckDoc[] = [];
    if (c.rubric) checks.push(rubricCheck(session));
    if (c.check_command) checks.push(await commandCheck(run, claimed, session));
    if (c.expected_text) {
      const events = await this.d.events.range(tenant, session._id, c.input_seq, 100_000);
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

  private async checkRunning(c: EvalCaseDoc, nowMs: number, check: CheckRunner | null) {
    const s = await this.d.sessions.getDoc(c.tenant_id, c.session_id!).catch(() => null);
    if (!s || s.terminated_at) {
      const token = newId('claim_');
      await this.d.c.evalCases.updateOne(
        c.tenant_id,
        { _id: c._id, status: 'running' },
        { $set: { claim: token } },
      );
      return this.endCase({ ...c, claim: token }, token, 'running', {
        status: 'errored',
        reason: s ? 'the session was terminated' : 'the session was deleted',
      });
    }
    if ((s.idle_seq ?? 0) > (c.input_seq ?? Infinity))
      return this.finishCase(c.tenant_id, c._id, s.idle_seq!, check);
    if (c.started_at && Date.parse(c.started_at) + this.d.config.caseTimeoutMs <= nowMs) {
      await this.d.sessions.send(c.tenant_id, s._id, [{ type: 'user.interrupt' }] as never);
      const token = newId('claim_');
      await this.d.c.evalCases.updateOne(
        c.tenant_id,
        { _id: c._id, status: 'running' },
        { $set: { claim: token } },
      );
      await this.endCase({ ...c, claim: token }, token, 'running', {
        status: 'errored',
        reason: `timed out after ${Math.round(this.d.config.caseTimeoutMs / 1000)} s`,
        usage: { ...zeroUsage(), ...s.usage },
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
  events.onAppended(async (tenant, sessionId, written) => {
    const idle = written.filter((e) => e.type === 'session.status_idle').at(-1);
    if (!idle) return;
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
