import type { LifecycleWebhooks } from '../webhooks/port.js';
import type { Agent, AgentCreate, AgentSpec, AgentUpdate, ModelConfig } from '@agentfleet/schemas';
import { TOOLSET_TYPE } from '@agentfleet/schemas';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { newId, PREFIX } from '../ids.js';
import { DuplicateKeyError } from '../store/port.js';
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import type { AgentDoc } from './records.js';
import { InvalidatingCollection } from '../store/readCache.js';
import { createdAtBounds, decodeCursor, makePage, pageById, type Page } from '../api/pagination.js';
import type { ModelResolver } from '../models/models.js';
import { applyMetadataPatch } from '../api/metadata.js';
import { checkToolPolicies } from './toolPolicy.js';
import { checkHarness, checkHarnessSpec } from '../sessions/compactionSettings.js';
import { refuseExecutionIdentity } from '../api/unsupported.js';
import { checkMultiagent, resolveRoster, rosterAt, rosterLookup } from './multiagent.js';
import { checkAgentMemoryStore, memoryStoreLookup } from '../memory/session/index.js';
import {
  normalizeSkillRefs,
  pinSkills,
  type PinnedSkill,
  type SessionSkillSource,
} from '../sessions/skills.js';
import { normalizeBuiltinToolSettings } from '../tools/webToolConfig.js';
import { deepFreeze, MAX_STORED_JSON_DEPTH, nowIso, valueDepth } from '../util.js';

type ModelInput = AgentCreate['model'];

export function normalizeModel(m: ModelInput): ModelConfig {
  if (typeof m === 'string') return { id: m };
  const out: ModelConfig = { id: m.id };
  if (m.effort != null)
    out.effort = typeof m.effort === 'string' ? { type: m.effort } : { type: m.effort.type };
  if (m.speed != null) out.speed = m.speed;
  if (m.inference_geo != null) out.inference_geo = m.inference_geo;
  return out;
}

const policy = (p: unknown) => (p && typeof p === 'object' ? p : { type: 'always_allow' });

/**
 * The stored form of an agent's tools. Built-in tool settings are validated (a 400 naming the
 * field under `field`, e.g. `tools[0].configs[1].allowed_domains`) by
 * normalizeBuiltinToolSettings (core/src/tools/webToolConfig.ts).
 */
export function normalizeTools(
  tools: readonly any[] | null | undefined,
  field = 'tools',
): AgentSpec['tools'] {
  const customTools = new Set<string>(
    (tools ?? []).filter((t) => t?.type === 'custom').map((t) => t.name),
  );
  return (tools ?? []).map((t, i) => {
    if (t.type === TOOLSET_TYPE || t.type === 'mcp_toolset') {
      const dc = {
        enabled: t.default_config?.enabled ?? true,
        permission_policy: policy(t.default_config?.permission_policy),
      };
      const configs = (t.configs ?? []).map((c: any, j: number) => ({
        ...(t.type === TOOLSET_TYPE
          ? normalizeBuiltinToolSettings(c, `${field}[${i}].configs[${j}]`, customTools)
          : c),
        ...(t.type === TOOLSET_TYPE ? { type: c.name } : {}),
        enabled: c.enabled ?? dc.enabled,
        permission_policy: policy(c.permission_policy ?? dc.permission_policy),
      }));
      return t.type === TOOLSET_TYPE
        ? { type: t.type, configs, default_config: dc }
        : { type: t.type, mcp_server_name: t.mcp_server_name, configs, default_config: dc };
    }
    return { ...t };
  });
}

function checkToolNames(tools: any[]): void {
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    const name =
      t.type === 'custom'
        ? t.name
        : t.type === 'mcp_toolset'
          ? `mcp_toolset:${t.mcp_server_name}`
          : t.type;
    if (seen.has(name)) throw invalid(`tools[${i}]`, `duplicate tool ${name}`);
    seen.add(name);
  });
}

/**
 * The agent's MCP servers against its tools, on the resulting agent (create, update, session
 * overrides and session update): server names are unique (`mcp_servers[i].name`); each
 * `mcp_toolset` names a server of `mcp_servers` (SDK: `mcp_server_name` "Must match a server
 * name from the mcp_servers array"; else a 400 naming `tools[i].mcp_server_name`), at most one
 * toolset per server (`tools[i]`), and every server is named by a toolset (SDK: "Every server
 * must be referenced by an `mcp_toolset` in `tools`; unreferenced servers are rejected"; else a
 * 400 naming `mcp_servers[i].name`). Tested in test/e2e/mcp/mcp-references.test.ts and
 * test/e2e/sdk/sdk_suite/test_mcp.py.
 */
export function checkMcpServers(spec: Pick<AgentSpec, 'tools' | 'mcp_servers'>): void {
  const servers = (spec.mcp_servers ?? []) as any[];
  const names = new Set<string>();
  servers.forEach((s, i) => {
    if (names.has(s.name))
      throw invalid(`mcp_servers[${i}].name`, `duplicate server name ${s.name}`);
    names.add(s.name);
  });
  const referenced = new Set<string>();
  ((spec.tools ?? []) as any[]).forEach((t, i) => {
    if (t?.type !== 'mcp_toolset') return;
    if (!names.has(t.mcp_server_name))
      throw invalid(
        `tools[${i}].mcp_server_name`,
        `no MCP server named ${t.mcp_server_name} in mcp_servers; an mcp_toolset must name a server of mcp_servers`,
      );
    if (referenced.has(t.mcp_server_name))
      throw invalid(`tools[${i}]`, `duplicate tool mcp_toolset:${t.mcp_server_name}`);
    referenced.add(t.mcp_server_name);
  });
  servers.forEach((s, i) => {
    if (!referenced.has(s.name))
      throw invalid(
        `mcp_servers[${i}].name`,
        `MCP server ${s.name} is not referenced by an mcp_toolset in tools; add {type: 'mcp_toolset', mcp_server_name: '${s.name}'}`,
      );
  });
}

/**
 * The stored form of an agent's `skills` (../sessions/skills.ts normalizeSkillRefs): object refs
 * only, a bare string is a 400 naming it.
 */
export const normalizeSkills = (
  skills: readonly unknown[] | null | undefined,
  field = 'skills',
): AgentSpec['skills'] => normalizeSkillRefs(skills, field);

export interface AgentServiceOptions {
  /**
   * Whether this deployment runs sandboxes (SANDBOX_DRIVER is not `none`). Without one, a
   * `stdio` MCP server has nowhere to run (its process belongs inside the session's sandbox),
   * so it is refused explicitly (spec McpServerConfig rule 2, Errors table) with a 400 naming
   * `mcp_servers[i].type`, on agent create/update and session create/update (agent overrides).
   * Tested in test/e2e/mcp/mcp-stdio-config.test.ts. Default true.
   */
  sandboxes?: boolean;
}

export class AgentService {
  constructor(
    private readonly c: Collections,
    private readonly models: ModelResolver,
    private readonly secrets: SecretBox,
    private readonly options: AgentServiceOptions = {},
  ) {}

  /** Lifecycle webhooks agent.created/updated/archived (platform wiring: platform.webhooks). */
  webhooks: LifecycleWebhooks | null = null;
  private skills: SessionSkillSource | null = null;
  /** The skill service that validates and pins `skills` refs (platform wiring: platform.skills). */
  useSkills(skills: SessionSkillSource): void {
    this.skills = skills;
  }

  /**
   * Validates `skills` refs and pins their versions (a 400 naming `skills[i].…`); without a
   * skill service (not wired) a non-empty list is refused, never stored unbound.
   */
  pinSkills(tenant: string, refs: AgentSpec['skills']): Promise<PinnedSkill[]> {
    return pinSkills(this.skills, tenant, refs);
  }

  /**
   * MCP bearer tokens are sealed at rest and never served (responses say has_authorization_token).
   * A url server sent without a token keeps the sealed token of the `previous` server with the
   * same name AND url (so the served object sent back, e.g. to add another server, loses
   * nothing), unless it says `has_authorization_token: false`; a changed url never takes the
   * token along to the new host; `has_authorization_token: true` with nothing to keep is a 400.
   * Tested in test/e2e/mcp/mcp-tokens.test.ts. stdio servers are refused without sandboxes (options).
   */
  sealMcp(
    servers: readonly any[] | null | undefined,
    previous: readonly any[] = [],
    field = 'mcp_servers',
  ): AgentSpec['mcp_servers'] {
    return (servers ?? []).map((s, i) => {
      if (s.type === 'stdio' && this.options.sandboxes === false)
        throw invalid(
          `${field}[${i}].type`,
          `a stdio MCP server runs inside the session's sandbox, and this deployment runs none (SANDBOX_DRIVER=none); use a url server`,
        );
      const { authorization_token, has_authorization_token, ...rest } = s;
      if (authorization_token)
        return {
          ...rest,
          authorization_token_sealed: this.secrets.seal(authorization_token, 'mcp-server-token'),
        };
      const kept =
        rest.type === 'url' && has_authorization_token !== false
          ? previous.find((p) => p.type === 'url' && p.name === rest.name && p.url === rest.url)
              ?.authorization_token_sealed
          : undefined;
      if (!kept && has_authorization_token === true) {
        throw invalid(
          `${field}[${i}].has_authorization_token`,
          `no token is stored for an MCP server named ${rest.name} with this url; send authorization_token`,
        );
      }
      return kept ? { ...rest, authorization_token_sealed: kept } : rest;
    });
  }

  /**
   * The checks an agent version passes (also run on a session's agent with overrides); answers
   * the skills pinned as of now (../sessions/skills.ts).
   */
  async validateSpec(tenant: string, spec: AgentSpec): Promise<PinnedSkill[]> {
    await this.models.validateForAgent(tenant, spec.model);
    checkToolNames(spec.tools as any[]);
    checkToolPolicies(spec.tools as any[]);
    if (spec.environment_id) {
      const env = await this.c.environments.get(tenant, spec.environment_id);
      if (!env || env.archived_at)
        throw invalid('environment_id', `environment ${spec.environment_id} not found`);
    }
    checkMcpServers(spec);
    checkHarnessSpec(spec);
    return this.pinSkills(tenant, spec.skills);
  }

  async create(tenant: string, body: AgentCreate): Promise<Agent> {
    const multiagent = await checkMultiagent(rosterLookup(this.c), tenant, body.multiagent);
    refuseExecutionIdentity(body.execution_identity);
    await checkAgentMemoryStore(memoryStoreLookup(this.c), tenant, body.memory_store_id);
    checkHarness(body.harness);
    const now = nowIso();
    const spec: AgentSpec = {
      name: body.name,
      description: body.description ?? null,
      model: normalizeModel(body.model),
      system: body.system ?? null,
      tools: normalizeTools(body.tools),
      skills: normalizeSkills(body.skills),
      mcp_servers: this.sealMcp(body.mcp_servers),
      environment_id: body.environment_id ?? null,
      memory_store_id: body.memory_store_id ?? null,
      harness: body.harness ?? 'default',
      metadata: body.metadata ?? {},
      execution_identity: body.execution_identity ?? { type: 'service_account' },
      multiagent: null,
    };
    await this.validateSpec(tenant, spec);
    const id = newId(PREFIX.agent);
    spec.multiagent = resolveRoster(multiagent, id, 1, spec.tools) ?? null;
    // Version row first: the agent becomes visible only once its first version exists.
    await this.c.agentVersions.insert(tenant, {
      _id: `${id}@1`,
      agent_id: id,
      version: 1,
      spec,
      created_at: now,
    });
    const doc: Omit<AgentDoc, 'tenant_id'> = {
      _id: id,
      version: 1,
      spec,
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.c.agents.insert(tenant, doc);
    await this.webhooks?.emit(tenant, 'agent.created', { id });
    return render({ ...doc, tenant_id: tenant });
  }

  /** The agent's document; through the exact in-process cache where the platform set one up. */
  async getDoc(tenant: string, id: string): Promise<AgentDoc> {
    const agents = this.c.agents;
    const doc =
      agents instanceof InvalidatingCollection
        ? await agents.getCached(tenant, id)
        : await agents.get(tenant, id);
    if (!doc) throw notFound('agent', id);
    return doc;
  }

  /** Rendered agents of cached (deep-frozen, so unchanging) documents: one render per document. */
  private readonly rendered = new WeakMap<AgentDoc, Agent>();

  /**
   * The agent, or one of its versions. From a cached document the same deep-frozen object is
   * answered each time (the gateway serializes it once: routes/agents.ts).
   */
  async get(tenant: string, id: string, version?: number): Promise<Agent> {
    const doc = await this.getDoc(tenant, id);
    if (version === undefined || version === doc.version) {
      if (!Object.isFrozen(doc)) return render(doc);
      let agent = this.rendered.get(doc);
      if (!agent) this.rendered.set(doc, (agent = deepFreeze(render(doc))));
      return agent;
    }
    return this.getVersion(tenant, id, version);
  }

  async getVersion(tenant: string, id: string, version: number): Promise<Agent> {
    const doc = await this.getDoc(tenant, id);
    const v = await this.c.agentVersions.findOne(tenant, { agent_id: id, version });
    if (!v || v.version > doc.version) throw notFound('agent version', `${id}@${version}`);
    return render({ ...doc, version: v.version, spec: v.spec, updated_at: v.created_at });
  }

  async list(
    tenant: string,
    q: {
      limit?: number;
      page?: string;
      cursor?: string;
      archived?: boolean;
      include_archived?: boolean;
      'created_at[gte]'?: string;
      'created_at[lte]'?: string;
    },
  ): Promise<Page<Agent>> {
    const filter: Record<string, unknown> = {};
    if (q.archived === true) filter.archived_at = { $ne: null };
    else if (!q.include_archived && q.archived !== false) filter.archived_at = null;
    else if (q.archived === false) filter.archived_at = null;
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    // Newest first, like the official API.
    const page = await pageById(this.c.agents, tenant, filter, q);
    return { ...page, data: page.data.map(render) };
  }

  async listVersions(
    tenant: string,
    id: string,
    q: { limit?: number; page?: string; cursor?: string },
  ): Promise<Page<Agent>> {
    const doc = await this.getDoc(tenant, id);
    const limit = q.limit ?? 20;
    const token = q.page ?? q.cursor;
    const cur = token ? decodeCursor(token) : null;
    const backwards = cur?.d === 'prev';
    const filter: Record<string, unknown> = { agent_id: id, version: { $lte: doc.version } };
    if (cur)
      filter.version = backwards
        ? { $gt: Number(cur.k), $lte: doc.version }
        : { $lt: Number(cur.k) };
    const rows = await this.c.agentVersions.find(tenant, filter, {
      sort: { version: backwards ? 1 : -1 },
      limit: limit + 1,
    });
    const page = makePage(
      rows,
      limit,
      (r) => r.version,
      (r) => r._id,
      { hadCursor: !!cur, backwards },
    );
    return {
      ...page,
      data: page.data.map((v) =>
        render({ ...doc, version: v.version, spec: v.spec, updated_at: v.created_at }),
      ),
    };
  }

  /** Every change bumps the version; a no-op update returns the current version unchanged. */
  async update(tenant: string, id: string, body: AgentUpdate): Promise<Agent> {
    const multiagent = await checkMultiagent(rosterLookup(this.c), tenant, body.multiagent, id);
    if (body.multiagent !== undefined) body = { ...body, multiagent };
    refuseExecutionIdentity(body.execution_identity);
    await checkAgentMemoryStore(memoryStoreLookup(this.c), tenant, body.memory_store_id);
    checkHarness(body.harness);
    for (let attempt = 0; attempt < 5; attempt++) {
      const doc = await this.getDoc(tenant, id);
      if (doc.archived_at)
        throw new ApiError('invalid_request', `agent ${id} is archived and cannot be updated`);
      if (body.version !== undefined && body.version !== doc.version) {
        throw conflict(`version: agent ${id} is at version ${doc.version}, not ${body.version}`, {
          current_version: doc.version,
        });
      }
      const next = doc.version + 1;
      const spec = this.applyPatch(doc.spec, body);
      // `self` at the version written; an unchanged roster compares at the current version.
      const same = rosterAt(spec, id, doc.version);
      if (JSON.stringify(same) === JSON.stringify(doc.spec)) return render(doc);
      spec.multiagent = rosterAt(spec, id, next).multiagent;
      await this.validateSpec(tenant, spec);
      const now = nowIso();
      try {
        // The unique (agent_id, version) row is the write lock: one updater wins version N+1.
        await this.c.agentVersions.insert(tenant, {
          _id: `${id}@${next}`,
          agent_id: id,
          version: next,
          spec,
          created_at: now,
        });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        await this.rollForward(tenant, id, next);
        if (body.version !== undefined)
          throw conflict(`version: agent ${id} was updated concurrently`, {
            current_version: next,
          });
        continue;
      }
      const updated = await this.c.agents.findOneAndUpdate(
        tenant,
        { _id: id, version: doc.version },
        { $set: { version: next, spec, updated_at: now } },
        { returnDocument: 'after' },
      );
      if (!updated) continue;
      await this.webhooks?.emit(tenant, 'agent.updated', { id }, { key: `${id}@${next}` });
      return render(updated);
    }
    throw conflict(`agent ${id} is being updated concurrently; retry`);
  }

  /** Repairs an update that wrote its version row but crashed before moving the agent. */
  private async rollForward(tenant: string, id: string, version: number): Promise<void> {
    const v = await this.c.agentVersions.findOne(tenant, { agent_id: id, version });
    if (v)
      await this.c.agents.updateOne(
        tenant,
        { _id: id, version: version - 1 },
        { $set: { version, spec: v.spec, updated_at: v.created_at } },
      );
  }

  private applyPatch(cur: AgentSpec, b: AgentUpdate): AgentSpec {
    // Old data: a spec stored before request bodies were depth-limited is not copied (a stack
    // overflow); an update that replaces its tools (the only free-form JSON) repairs it.
    if (valueDepth(cur, MAX_STORED_JSON_DEPTH) > MAX_STORED_JSON_DEPTH) {
      if (b.tools === undefined)
        throw invalid(
          'tools',
          `the stored agent nests JSON deeper than ${MAX_STORED_JSON_DEPTH} levels (stored before that limit); send tools to replace them`,
        );
      cur = { ...cur, tools: [] };
    }
    const s: AgentSpec = structuredClone(cur);
    if (b.name !== undefined) s.name = b.name;
    if (b.description !== undefined) s.description = b.description;
    if (b.model !== undefined) s.model = normalizeModel(b.model);
    if (b.system !== undefined) s.system = b.system;
    if (b.tools !== undefined) s.tools = normalizeTools(b.tools);
    if (b.skills !== undefined) s.skills = normalizeSkills(b.skills);
    if (b.mcp_servers !== undefined) s.mcp_servers = this.sealMcp(b.mcp_servers, cur.mcp_servers);
    if (b.environment_id !== undefined) s.environment_id = b.environment_id;
    if (b.memory_store_id !== undefined) s.memory_store_id = b.memory_store_id;
    if (b.harness !== undefined) s.harness = b.harness;
    if (b.execution_identity !== undefined)
      s.execution_identity = b.execution_identity ?? { type: 'service_account' };
    if (b.multiagent !== undefined) s.multiagent = b.multiagent;
    s.metadata = applyMetadataPatch(s.metadata, b.metadata);
    return s;
  }

  /** Soft delete: sessions keep their pinned version. */
  async archive(tenant: string, id: string): Promise<Agent> {
    const now = nowIso();
    await this.getDoc(tenant, id);
    const r = await this.c.agents.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.webhooks?.emit(tenant, 'agent.archived', { id });
    return render(await this.getDoc(tenant, id));
  }
}

const publicMcp = (servers: unknown[]) =>
  servers.map((s: any) => {
    const { authorization_token_sealed, ...rest } = s;
    return authorization_token_sealed ? { ...rest, has_authorization_token: true } : rest;
  });

export function renderSpec(spec: AgentSpec) {
  return { ...spec, mcp_servers: publicMcp(spec.mcp_servers) };
}

export function render(doc: AgentDoc): Agent {
  return {
    id: doc._id,
    type: 'agent',
    ...renderSpec(doc.spec),
    version: doc.version,
    archived: doc.archived_at !== null,
    archived_at: doc.archived_at,
    created_at: doc.created_at,
    updated_at: doc.updated_at,
  };
}
