/**
 * Eval runs: one agent version over a set of cases, each case its own session in its own
 * sandbox, run as worker jobs from the bus (group `eval-runner`, ./work.ts). States:
 * ./records.ts.
 *
 * Guarantees (test/e2e/evals/evals.test.ts):
 * - start checks everything before storing (agent version, environment, cases); the cases
 *   are stored, then the run, then the first cases are dispatched;
 * - reads are tenant-scoped: another tenant's run is a 404;
 * - cancel stops what runs: queued cases are cancelled, running sessions are interrupted, a
 *   judge that finishes later changes nothing (its compare-and-swap needs `judging`);
 * - compare matches two runs' cases by id (./compare.ts).
 */
import {
  compileBody,
  EvalCreate,
  type EvalComparison,
  type EvalListQuery,
} from '@agentfleet/schemas';
import { pageById, type Page } from '../api/pagination.js';
import { invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { normalizeCases, parseJsonlCases } from './cases.js';
import { compareRuns } from './compare.js';
import {
  FINAL_CASE,
  LIVE_RUN,
  renderRun,
  zeroUsage,
  type EvalCaseDoc,
  type EvalRunDoc,
  type RenderedRun,
} from './records.js';
import { EvalWork, type EvalDeps } from './work.js';

const checkCreate = compileBody(EvalCreate);
const nowIso = () => new Date().toISOString();

export type { EvalDeps } from './work.js';

export class EvalService {
  /** The worker's steps (the eval runner calls them). */
  readonly work: EvalWork;
  constructor(private readonly d: EvalDeps) {
    this.work = new EvalWork(d);
  }
  readonly startCase: EvalWork['startCase'] = (...a) => this.work.startCase(...a);
  readonly finishCase: EvalWork['finishCase'] = (...a) => this.work.finishCase(...a);
  readonly sweep: EvalWork['sweep'] = (...a) => this.work.sweep(...a);

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
      prompt_seq: null,
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
    await this.work.dispatch(tenant, run._id).catch((err) =>
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
    // The run named in the path first: another tenant's id is a 404 whatever the query says.
    const a = await this.get(tenant, id);
    if (typeof other !== 'string' || !other) throw invalid('with', 'is required (an eval run id)');
    return compareRuns(a, await this.get(tenant, other));
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
}
