import type { RubricFileReader } from '../outcomes/index.js';
import type { InputEvent, SessionCreate, SessionUpdate } from '@agentfleet/schemas';
import { invalid, notFound, withErrorCode } from '../errors.js';
import { newId, PREFIX } from '../ids.js';
import type { CommandBus } from '../bus/port.js';
import type { PubSub } from '../coordination/port.js';
import { SANDBOX_CONTROL_CHANNEL } from '../sandbox/port.js';
import type { AgentService } from '../agents/agents.js';
import { normalizeTools } from '../agents/agents.js';
import type { Collections } from '../store/collections.js';
import type { SessionDoc } from './records.js';
import type { EventDraft, EventLog } from '../events/log.js';
import type { ModelResolver } from '../models/models.js';
import { createdAtBounds, pageById, type Page } from '../api/pagination.js';
import { applyMetadataPatch } from '../api/metadata.js';
import { budgetUpdateFields, checkCreateBudget } from './budget.js';
import { checkVaultIds } from '../vaults/vaults.js';
import { refuseUnservableBaseImage } from '../environments/baseImage.js';
import { checkSessionAgentMcp, sessionAgentSnapshot } from './agent.js';
import { checkToolPolicies } from '../agents/toolPolicy.js';
import { refuseOnSelfHosted } from '../api/unsupported.js';
import { resolveSessionResources } from './resources.js';
import { SessionResources } from './sessionResources.js';
import type { RepositorySupport } from '../repositories/index.js';
import type { SecretBox } from '../crypto.js';
import { freshSession } from './turnState.js';
import { SessionTurns } from './turns.js';
import { publishInterrupt, SessionInput, type WorkQueue } from './sessionInput.js';
import { renderSession, sessionChanges } from './render.js';
export { refuseUnbuiltEvents } from '../api/unsupported.js';
export { cascadeSessionDelete } from './cascade.js';
import { MAX_STORED_JSON_DEPTH, nowIso, valueDepth } from '../util.js';
import { deriveStatus, liveRuns } from './status.js';
import type { LifecycleWebhooks } from '../webhooks/port.js';
import { pinRoster } from '../threads/roster.js';
import { ThreadService, withThreadUsage } from '../threads/threads.js';

export { deriveStatus, runIsLive } from './status.js';
export { environmentSnapshot } from './environmentSnapshot.js';
import { snapshotOf } from './environmentSnapshot.js';

export type { SessionFileResource, SessionResource } from './resources.js';

export type { InterruptSignal, WorkQueue } from './sessionInput.js';
export { renderSession, sessionChanges } from './render.js';

/**
 * Sessions: create (the agent version and environment snapshotted, resources and vaults
 * checked), read, list, update, archive, send input, cancel, delete.
 *
 * Guarantees:
 * - a session runs the agent version and environment it was created with: later edits of either
 *   never reach it (`agent` and `environment` snapshots; test/e2e/environments tests);
 * - `send` validates every event before writing any, so a bad batch writes nothing; the events
 *   are durable in the log before it answers; a terminated or archived session accepts no input;
 *   an interrupt is published live to the worker running the turn as well as written to the log
 *   (./sessionInput.ts);
 * - every read and write is tenant-scoped: another tenant's id answers 404, never its data
 *   (test/e2e/auth/tenancy-routes.test.ts);
 * - delete terminates (sticky), stops the runtime, then cascades idempotently (./cascade.ts).
 */
export class SessionService {
  constructor(
    private readonly c: Collections,
    private readonly agents: AgentService,
    private readonly models: ModelResolver,
    private readonly log: EventLog,
    private readonly bus: CommandBus,
    private readonly pubsub: PubSub,
    /**
     * The deployment's sandbox driver (which environments' base_image it can serve, whether
     * repository resources have an egress enforcement point) and the box repository tokens are
     * sealed in.
     */
    private readonly opts: RepositorySupport & { secrets?: SecretBox } = {},
  ) {
    this.turns = new SessionTurns(c);
    this.resources = new SessionResources(c, (tenant, id) => this.getDoc(tenant, id), opts.secrets);
    this.threads = new ThreadService(c, log, bus, pubsub);
    this.input = new SessionInput(c, log, bus, pubsub, () => this.workQueue, this.threads);
  }

  /** sessions.threads: a coordinator session's threads (core/src/threads). */
  readonly threads: ThreadService;

  /** sessions.resources: list, retrieve, add, update (token rotation), delete (./sessionResources.ts). */
  readonly resources: SessionResources;

  /** The worker's reads and run records of the sessions' turns (./turns.ts). */
  readonly turns: SessionTurns;

  /** send and cancel (./sessionInput.ts). */
  private readonly input: SessionInput;

  /** Lifecycle webhooks session.* (platform wiring; status ones: core/src/webhooks/hooks.ts). */
  webhooks: LifecycleWebhooks | null = null;
  private workQueue: WorkQueue | null = null;
  /** Reads file rubrics of user.define_outcome (platform wiring: the file service). */
  useRubricFiles(r: RubricFileReader): void {
    this.input.rubricFiles = r;
  }
  /** The Work queue of self_hosted environments (platform wiring: WorkService.enqueue). */
  useWorkQueue(q: WorkQueue): void {
    this.workQueue = q;
  }

  /**
   * `opts.id`: the session's id chosen by the caller (an eval case fixes it before the session
   * exists, so a retry finds it: a second create with it throws DuplicateKeyError).
   */
  async create(tenant: string, body: SessionCreate, opts: { id?: string } = {}) {
    await checkVaultIds(this.c, tenant, body.vault_ids);
    const ref = typeof body.agent === 'string' ? { id: body.agent } : body.agent;
    const agentDoc = await this.c.agents.get(tenant, ref.id);
    if (!agentDoc) throw invalid('agent', `agent ${ref.id} not found`);
    if (agentDoc.archived_at) throw invalid('agent', `agent ${ref.id} is archived`);
    const version = 'version' in ref && ref.version !== undefined ? ref.version : agentDoc.version;
    const pinned =
      version === agentDoc.version
        ? agentDoc.spec
        : (await this.c.agentVersions.findOne(tenant, { agent_id: ref.id, version }))?.spec;
    if (!pinned || version > agentDoc.version)
      throw invalid('agent.version', `agent ${ref.id} has no version ${version}`);
    // Old data: agents stored before request bodies were depth-limited are refused, not copied (a stack overflow).
    if (valueDepth(pinned, MAX_STORED_JSON_DEPTH) > MAX_STORED_JSON_DEPTH)
      throw invalid(
        'agent',
        `agent ${ref.id} version ${version} nests JSON deeper than ${MAX_STORED_JSON_DEPTH} levels (stored before that limit); update its tools or create a new agent`,
      );
    const snapshot = await sessionAgentSnapshot(this.agents, tenant, body.agent, pinned, version);
    // Without one in the body, the pinned agent version's environment_id is the session's
    // (test/e2e/sessions/session-default-environment.test.ts).
    const envId = body.environment_id ?? pinned.environment_id;
    if (!envId)
      throw invalid(
        'environment_id',
        `is required: agent ${ref.id} (version ${version}) names no environment_id`,
      );
    const env = await this.c.environments.get(tenant, envId);
    if (!env)
      throw withErrorCode(
        invalid('environment_id', `environment ${envId} not found`),
        'environment_not_found',
      );
    if (env.archived_at)
      throw withErrorCode(
        invalid('environment_id', `environment ${envId} is archived`),
        'environment_archived',
      );
    refuseUnservableBaseImage(this.opts, env.base_image, 'environment_id');
    refuseOnSelfHosted(env.kind, snapshot, body.resources);
    // A coordinator's roster, pinned now like the agent (core/src/threads/roster.ts).
    const roster = await pinRoster(this.c, this.agents, tenant, snapshot);
    if (roster && env.kind === 'self_hosted')
      throw invalid(
        'environment_id',
        'a coordinator agent (multiagent) runs its threads on the cloud lane: self_hosted environments do not serve session threads yet',
      );
    // Declared resources must be materializable before anything is allocated (spec Work rule 1).
    const now = nowIso();
    const { resources, tokens } = await resolveSessionResources(
      this.c,
      tenant,
      body.resources,
      snapshot.memory_store_id,
      now,
      { support: this.opts, base_image: env.base_image },
    );
    const hasVendor = this.models.hasVendorFallback;
    await checkCreateBudget(this.c, tenant, body.budget, snapshot.model.id, hasVendor);
    const doc: Omit<SessionDoc, 'tenant_id'> = {
      _id: opts.id ?? newId(PREFIX.session),
      agent_id: ref.id,
      agent_version: version,
      agent: snapshot,
      ...(roster ? { roster } : {}),
      environment_id: envId,
      environment: snapshotOf(env),
      title: body.title ?? null,
      metadata: body.metadata ?? {},
      resources,
      ...(Object.keys(tokens).length
        ? { repository_tokens: this.resources.sealTokens(tokens) }
        : {}),
      vault_ids: body.vault_ids ?? [],
      budget: body.budget ?? null,
      ...freshSession(now),
    };
    await this.c.sessions.insert(tenant, doc);
    // Self-hosted: its Work item, durable before the answer (core/src/work; test/e2e/work/work-api.test.ts).
    if (env.kind === 'self_hosted')
      await this.workQueue?.(tenant, { id: doc._id, environment_id: env._id });
    await this.webhooks?.emit(tenant, 'session.created', { id: doc._id });
    if (body.initial_events?.length) await this.send(tenant, doc._id, body.initial_events);
    return this.get(tenant, doc._id);
  }

  async getDoc(tenant: string, id: string): Promise<SessionDoc> {
    const s = await this.c.sessions.get(tenant, id);
    // A child thread's document is not a session (core/src/threads/records.ts).
    if (!s || s.deleted_at || s.thread_of) throw notFound('session', id);
    return s;
  }

  async get(tenant: string, id: string) {
    const s = await this.getDoc(tenant, id);
    const run = await this.c.runs.get(tenant, id);
    const [live] = await liveRuns(this.c, tenant, [[s, run]]);
    return renderSession(await this.summed(tenant, s), live!);
  }

  /** The served status of the stored session `s` (./status.ts), without rendering the rest. */
  async status(tenant: string, s: SessionDoc) {
    const run = await this.c.runs.get(tenant, s._id);
    const [live] = await liveRuns(this.c, tenant, [[s, run]]);
    return deriveStatus(s, live!);
  }

  /** `s` with its child threads' usage added (a coordinator session; others as they are). */
  async summed(tenant: string, s: SessionDoc): Promise<SessionDoc> {
    return s.roster ? withThreadUsage(s, await this.threads.children(tenant, s._id)) : s;
  }

  async list(
    tenant: string,
    q: Record<string, any>,
  ): Promise<Page<ReturnType<typeof renderSession>>> {
    const filter: Record<string, unknown> = { deleted_at: null, thread_of: null };
    if (!q.include_archived) filter.archived_at = null;
    if (q.agent_id) filter.agent_id = q.agent_id;
    if (q.agent_version) filter.agent_version = q.agent_version;
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    if (q.deployment_id) filter.deployment_id = q.deployment_id;
    // Sessions with that store mounted (declared, or the agent's own).
    if (q.memory_store_id) filter['resources.memory_store_id'] = q.memory_store_id;
    const statuses: string[] = [...(q.statuses ?? []), ...(q.status ? [q.status] : [])];
    if (statuses.length) {
      const runs = await this.c.runs.find(tenant, {});
      const docs = new Map(
        (await this.c.sessions.find(tenant, { _id: { $in: runs.map((r) => r._id) } })).map((d) => [
          d._id,
          d,
        ]),
      );
      const withDoc = runs.filter((r) => docs.has(r._id));
      const states = await liveRuns(
        this.c,
        tenant,
        withDoc.map((r) => [docs.get(r._id)!, r]),
      );
      const live = withDoc.map((r, i) => [r._id, states[i]!] as const);
      const running = live.filter(([, l]) => l === true).map(([id]) => id);
      const rescheduling = live.filter(([, l]) => l === 'rescheduling').map(([id]) => id);
      const busy = [...running, ...rescheduling];
      const ors: Record<string, unknown>[] = [];
      if (statuses.includes('terminated')) ors.push({ terminated_at: { $ne: null } });
      if (statuses.includes('running')) ors.push({ terminated_at: null, _id: { $in: running } });
      if (statuses.includes('rescheduling'))
        ors.push({ terminated_at: null, _id: { $in: rescheduling } });
      if (statuses.includes('idle')) ors.push({ terminated_at: null, _id: { $nin: busy } });
      filter.$or = ors.length ? ors : [{ _id: { $in: [] } }];
    }
    const page = await pageById(this.c.sessions, tenant, filter, q, q.order ?? 'desc');
    const runs = new Map(
      (await this.c.runs.find(tenant, { _id: { $in: page.data.map((s) => s._id) } })).map((r) => [
        r._id,
        r,
      ]),
    );
    const states = await liveRuns(
      this.c,
      tenant,
      page.data.map((s) => [s, runs.get(s._id)]),
    );
    const summed = await Promise.all(page.data.map((s) => this.summed(tenant, s)));
    return { ...page, data: summed.map((s, i) => renderSession(s, states[i]!)) };
  }

  async update(tenant: string, id: string, b: SessionUpdate) {
    const s = await this.getDoc(tenant, id);
    await checkVaultIds(this.c, tenant, b.vault_ids);
    const set: Record<string, unknown> = { updated_at: nowIso() };
    if (b.title !== undefined) set.title = b.title;
    if (b.vault_ids !== undefined) set.vault_ids = b.vault_ids;
    const hasVendor = this.models.hasVendorFallback;
    Object.assign(set, await budgetUpdateFields(this.c, tenant, s, b.budget, hasVendor));
    if (b.metadata !== undefined) set.metadata = applyMetadataPatch(s.metadata, b.metadata);
    if (b.agent?.tools !== undefined) checkToolPolicies(b.agent.tools, 'agent.tools');
    refuseOnSelfHosted(s.environment?.kind, b.agent ?? {});
    if (b.agent?.tools !== undefined)
      set['agent.tools'] = normalizeTools(b.agent.tools, 'agent.tools');
    if (b.agent?.mcp_servers !== undefined)
      set['agent.mcp_servers'] = this.agents.sealMcp(
        b.agent.mcp_servers,
        s.agent.mcp_servers,
        'agent.mcp_servers',
      );
    if (b.agent?.tools !== undefined || b.agent?.mcp_servers !== undefined)
      checkSessionAgentMcp(
        (set['agent.tools'] ?? s.agent.tools) as SessionDoc['agent']['tools'],
        (set['agent.mcp_servers'] ?? s.agent.mcp_servers) as SessionDoc['agent']['mcp_servers'],
      );
    await this.c.sessions.updateOne(tenant, { _id: id }, { $set: set });
    const after = await this.get(tenant, id);
    const changed = sessionChanges(renderSession(s, false), after);
    if (changed) {
      const [ev] = await this.log.append(
        tenant,
        id,
        [{ type: 'session.updated', payload: changed }],
        { allowTerminated: true },
      );
      await this.webhooks?.emit(tenant, 'session.updated', { id }, { key: ev!._id });
    }
    return after;
  }

  async archive(tenant: string, id: string) {
    await this.getDoc(tenant, id);
    const now = nowIso();
    const r = await this.c.sessions.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.webhooks?.emit(tenant, 'session.archived', { id });
    return this.get(tenant, id);
  }

  /**
   * Appends input events in order, all validated first so nothing is half-written, then
   * triggers the turn (./sessionInput.ts). `extra` goes in the same append, after the events.
   */
  async send(tenant: string, id: string, events: InputEvent[], extra: EventDraft[] = []) {
    return this.input.send(tenant, await this.getDoc(tenant, id), events, extra);
  }

  /** Cancels the running turn, like an interrupt that does not come from the user. */
  async cancel(tenant: string, id: string) {
    await this.input.cancel(tenant, await this.getDoc(tenant, id));
    return this.get(tenant, id);
  }

  /** Soft delete: terminate (sticky), stop the runtime, then a tenant-scoped idempotent cascade. */
  async remove(tenant: string, id: string): Promise<{ id: string; type: 'session_deleted' }> {
    const s = await this.getDoc(tenant, id);
    const now = nowIso();
    const children = await this.threads.children(tenant, id);
    if (!s.terminated_at) {
      // Its child threads end with it (session.thread_status_terminated, before the last event).
      const ended = children
        .filter((c) => !c.terminated_at)
        .map((c) => ({
          type: 'session.thread_status_terminated',
          payload: { session_thread_id: c._id, agent_name: c.thread?.agent_name ?? c.agent.name },
        }));
      await this.log.append(
        tenant,
        id,
        [
          { type: 'session.status_terminated', payload: {} },
          ...ended,
          { type: 'session.deleted', payload: {} },
        ],
        {
          allowTerminated: true,
          sessionUpdate: () => ({ $set: { terminated_at: now } }),
        },
      );
      await publishInterrupt(this.pubsub, id, 0, 'terminated');
    }
    // Whichever worker holds the sandbox destroys it without a snapshot or output sync (the
    // session is being deleted) and removes its snapshots; the cascade removes the rest.
    await this.pubsub.publish(SANDBOX_CONTROL_CHANNEL, {
      type: 'destroy',
      tenantId: tenant,
      sessionId: id,
      environmentId: s.environment_id,
      discard: true,
    });
    await this.c.sessions.updateOne(
      tenant,
      { _id: id },
      { $set: { deleted_at: now, updated_at: now } },
    );
    await this.webhooks?.emit(tenant, 'session.deleted', { id }, { key: `${id}:deleted` });
    // Its child threads end with it: terminated, their turns told to stop, logs and runs gone.
    for (const child of children) {
      await this.c.sessions.updateOne(
        tenant,
        { _id: child._id },
        { $set: { terminated_at: child.terminated_at ?? now, deleted_at: now } },
      );
      await publishInterrupt(this.pubsub, child._id, 0, 'terminated');
      await this.c.runs.deleteMany(tenant, { _id: child._id });
      await this.c.events.deleteMany(tenant, { session_id: child._id });
    }
    await this.c.runs.deleteMany(tenant, { _id: id });
    await this.c.events.deleteMany(tenant, { session_id: id });
    return { id, type: 'session_deleted' };
  }
}
