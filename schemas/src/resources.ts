import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Id, Nullable, Obj, TOOLSET_TYPE } from './common.js';
import { BudgetLimit } from './common.js';
import { CustomToolParams, EffortName, McpStdioPortServer, Policy } from './agents.js';
import { RUNTIME_STATUSES } from './sessions.js';
import { ERROR_STATUS } from './errors.js';

/**
 * Served resources: the exact shapes the REST surface answers with (the domain's `render`
 * functions), strict so an unannounced field is a contract change. Types are inferred from
 * these schemas; `test/e2e/api/contract-shapes.test.ts` validates live responses against them and
 * `test/kit/sdk-types.ts` checks them against the official SDK's types.
 */

const Timestamp = Type.String({ format: 'date-time' });
const StringMap = Type.Record(Type.String(), Type.String());

// ---------------------------------------------------------------------------------------------
// Agent

/** Stored, normalized model config (what agents, versions and sessions carry). */
export const ModelConfig = Obj({
  id: Type.String({ minLength: 1 }),
  effort: Type.Optional(Obj({ type: EffortName })),
  speed: Type.Optional(Type.Union([Type.Literal('standard'), Type.Literal('fast')])),
  inference_geo: Type.Optional(Type.String()),
});
export type ModelConfig = Static<typeof ModelConfig>;

/**
 * One resolved built-in tool config: `type` mirrors `name`, `enabled` and `permission_policy`
 * are resolved against the toolset's default_config. Other settings the client sent (web_fetch
 * and web_search options) are passed through as given.
 */
const toolConfig = <N extends string>(name: N) =>
  Type.Object(
    {
      name: Type.Literal(name),
      type: Type.Literal(name),
      enabled: Type.Boolean(),
      permission_policy: Policy,
    },
    { additionalProperties: true },
  );
export const ToolConfigOut = Type.Union([
  toolConfig('bash'),
  toolConfig('edit'),
  toolConfig('read'),
  toolConfig('write'),
  toolConfig('glob'),
  toolConfig('grep'),
  toolConfig('web_fetch'),
  toolConfig('web_search'),
]);
const ToolsetDefaultConfig = Obj({ enabled: Type.Boolean(), permission_policy: Policy });

export const AgentToolsetOut = Obj({
  type: Type.Literal(TOOLSET_TYPE),
  configs: Type.Array(ToolConfigOut),
  default_config: ToolsetDefaultConfig,
});
export const McpToolsetOut = Obj({
  type: Type.Literal('mcp_toolset'),
  mcp_server_name: Type.String(),
  configs: Type.Array(
    Obj({ name: Type.String(), enabled: Type.Boolean(), permission_policy: Policy }),
  ),
  default_config: ToolsetDefaultConfig,
});
/** A resolved tool: custom tools are served exactly as they were defined. */
export const AgentToolOut = Type.Union([AgentToolsetOut, McpToolsetOut, CustomToolParams]);
export type AgentToolOut = Static<typeof AgentToolOut>;

/** Skills bind only in object form; `version` defaults to `latest` (null when the client sent null). */
export const SkillOut = Obj({
  skill_id: Type.String(),
  type: Type.Union([Type.Literal('custom'), Type.Literal('anthropic')]),
  version: Type.String(),
});
export type SkillOut = Static<typeof SkillOut>;

const McpName = Type.String({ minLength: 1, maxLength: 64 });
const StdioServer = Obj({
  name: McpName,
  type: Type.Literal('stdio'),
  command: Type.String(),
  args: Type.Optional(Type.Array(Type.String())),
  env: Type.Optional(StringMap),
});
/** MCP servers as stored: a URL server's token is sealed at rest. */
export const StoredMcpServer = Type.Union([
  Obj({
    name: McpName,
    type: Type.Literal('url'),
    url: Type.String(),
    authorization_token_sealed: Type.Optional(Type.String()),
  }),
  StdioServer,
  McpStdioPortServer,
]);
export type StoredMcpServer = Static<typeof StoredMcpServer>;
/** MCP servers as served: the token never leaves; its presence is flagged. */
export const McpServerOut = Type.Union([
  Obj({
    name: McpName,
    type: Type.Literal('url'),
    url: Type.String(),
    has_authorization_token: Type.Optional(Type.Literal(true)),
  }),
  StdioServer,
  McpStdioPortServer,
]);
export type McpServerOut = Static<typeof McpServerOut>;

export const ExecutionIdentity = Type.Union([
  Obj({ type: Type.Literal('service_account') }),
  Obj({ type: Type.Literal('aws_role'), role_arn: Type.String() }),
]);

const specFields = <M extends TSchema>(mcp: M) => ({
  name: Type.String(),
  description: Nullable(Type.String()),
  model: ModelConfig,
  system: Nullable(Type.String()),
  tools: Type.Array(AgentToolOut),
  skills: Type.Array(SkillOut),
  mcp_servers: Type.Array(mcp),
  environment_id: Nullable(Type.String()),
  memory_store_id: Nullable(Type.String()),
  harness: Type.String(),
  metadata: StringMap,
  execution_identity: ExecutionIdentity,
  /** Passed through as the client sent it (validated only for its `type`). */
  multiagent: Nullable(Type.Object({ type: Type.String() }, { additionalProperties: true })),
});

/** The versioned part of an agent, as stored: every field a version pins. */
export const AgentSpec = Obj(specFields(StoredMcpServer));
export type AgentSpec = Static<typeof AgentSpec>;

const AgentSpecOut = specFields(McpServerOut);

export const Agent = Obj({
  id: Id('agent_'),
  type: Type.Literal('agent'),
  ...AgentSpecOut,
  version: Type.Integer({ minimum: 1 }),
  archived: Type.Boolean(),
  archived_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Agent = Static<typeof Agent>;

// ---------------------------------------------------------------------------------------------
// Environment

const PkgLists = {
  pip: Type.Array(Type.String()),
  npm: Type.Array(Type.String()),
  apt: Type.Array(Type.String()),
  cargo: Type.Array(Type.String()),
  gem: Type.Array(Type.String()),
  go: Type.Array(Type.String()),
};
export const Packages = Obj(PkgLists);
export type Packages = Static<typeof Packages>;

/** The SDK's view: `cloud` (networking and packages resolved) or `self_hosted`. */
export const EnvironmentConfig = Type.Union([
  Obj({
    type: Type.Literal('cloud'),
    networking: Type.Union([
      Obj({ type: Type.Literal('unrestricted') }),
      Obj({
        type: Type.Literal('limited'),
        allowed_hosts: Type.Array(Type.String()),
        allow_mcp_servers: Type.Boolean(),
        allow_package_managers: Type.Boolean(),
      }),
    ]),
    packages: Obj({ type: Type.Literal('packages'), ...PkgLists }),
  }),
  Obj({ type: Type.Literal('self_hosted') }),
]);

export const Environment = Obj({
  id: Id('env_'),
  type: Type.Literal('environment'),
  name: Type.String(),
  description: Nullable(Type.String()),
  config: EnvironmentConfig,
  // The spec's view of the same settings.
  base_image: Nullable(Type.String()),
  packages: Packages,
  network: Obj({ allowlist: Type.Array(Type.String()), denylist: Type.Array(Type.String()) }),
  env: StringMap,
  metadata: StringMap,
  scope: Type.Union([Type.Literal('organization'), Type.Literal('account')]),
  archived_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Environment = Static<typeof Environment>;

// ---------------------------------------------------------------------------------------------
// Session

/** The agent version a session is pinned to (with any overrides applied). */
export const SessionAgent = Obj({
  id: Id('agent_'),
  type: Type.Literal('agent'),
  version: Type.Integer({ minimum: 1 }),
  ...AgentSpecOut,
});
export type SessionAgent = Static<typeof SessionAgent>;

const TokenCount = Type.Integer({ minimum: 0 });
export const SessionUsage = Obj({
  input_tokens: TokenCount,
  output_tokens: TokenCount,
  cache_read_input_tokens: TokenCount,
  cache_creation_input_tokens: TokenCount,
  /** Tracked list cost in cents (core/src/sessions/budget.ts); null once usage had no list price. */
  list_cost: Type.Optional(
    Nullable(
      Obj({ amount: Type.String({ pattern: '^(0|[1-9][0-9]*)$' }), currency: Type.Literal('USD') }),
    ),
  ),
});

/** A session resource as served (SDK BetaManagedAgentsSessionResource; sessions.resources). */
export const SessionResource = Type.Union([
  Obj({
    id: Type.String(),
    type: Type.Literal('file'),
    file_id: Type.String(),
    mount_path: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  }),
  /** SDK BetaManagedAgentsMemoryStoreResource (core/src/memory/session/resources.ts). */
  Obj({
    type: Type.Literal('memory_store'),
    memory_store_id: Type.String(),
    access: Type.Union([Type.Literal('read_write'), Type.Literal('read_only')]),
    name: Type.String(),
    description: Type.String(),
    instructions: Nullable(Type.String()),
    mount_path: Type.String(),
  }),
  /** SDK BetaManagedAgentsGitHubRepositoryResource (core/src/repositories/records.ts); never a token. */
  Obj({
    id: Type.String(),
    type: Type.Union([Type.Literal('github_repository'), Type.Literal('code_host_repository')]),
    url: Type.String(),
    mount_path: Type.String(),
    checkout: Nullable(
      Type.Union([
        Obj({ type: Type.Literal('branch'), name: Type.String() }),
        Obj({ type: Type.Literal('commit'), sha: Type.String() }),
      ]),
    ),
    created_at: Type.String(),
    updated_at: Type.String(),
  }),
]);

/** A session thread (SDK BetaManagedAgentsSessionThread; core/src/threads). */
export const SessionThread = Obj({
  id: Type.String({ pattern: '^sthr_' }),
  type: Type.Literal('session_thread'),
  session_id: Id('sess_'),
  parent_thread_id: Nullable(Type.String({ pattern: '^sthr_' })),
  /** The thread's agent: its snapshot (SDK BetaManagedAgentsSessionThreadAgent). */
  agent: Obj({
    id: Id('agent_'),
    type: Type.Literal('agent'),
    version: Type.Integer({ minimum: 1 }),
    name: Type.String(),
    description: Nullable(Type.String()),
    model: AgentSpecOut.model,
    system: Nullable(Type.String()),
    tools: AgentSpecOut.tools,
    skills: AgentSpecOut.skills,
    mcp_servers: AgentSpecOut.mcp_servers,
    execution_identity: AgentSpecOut.execution_identity,
  }),
  status: Type.Union(RUNTIME_STATUSES.map((s) => Type.Literal(s))),
  archived_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  stats: Nullable(
    Obj({
      active_seconds: Type.Optional(Type.Number({ minimum: 0 })),
      duration_seconds: Type.Optional(Type.Number({ minimum: 0 })),
      startup_seconds: Type.Optional(Type.Number({ minimum: 0 })),
    }),
  ),
  usage: Nullable(
    Obj({ ...SessionUsage.properties, active_seconds: Type.Optional(Type.Number({ minimum: 0 })) }),
  ),
  workflow_run_id: Type.Null(),
});
export type SessionThread = Static<typeof SessionThread>;

export const Session = Obj({
  id: Id('sess_'),
  type: Type.Literal('session'),
  agent: SessionAgent,
  agent_id: Id('agent_'),
  agent_version: Type.Integer({ minimum: 1 }),
  environment_id: Id('env_'),
  title: Nullable(Type.String()),
  metadata: StringMap,
  resources: Type.Array(SessionResource),
  vault_ids: Type.Array(Type.String()),
  /** Set on sessions a deployment run created (SDK `deployment_id`). */
  deployment_id: Type.Optional(Nullable(Id('depl_'))),
  /** Passed through as the client sent it (validated only for its `type`). */
  budget: Nullable(BudgetLimit),
  status: Type.Union(RUNTIME_STATUSES.map((s) => Type.Literal(s))),
  stats: Obj({
    active_seconds: Type.Optional(Type.Number({ minimum: 0 })),
    duration_seconds: Type.Optional(Type.Number({ minimum: 0 })),
  }),
  usage: SessionUsage,
  outcome_evaluations: Type.Array(
    Obj({
      type: Type.Literal('outcome_evaluation'),
      outcome_id: Type.String(),
      description: Type.String(),
      result: Type.Union(
        [
          'pending',
          'running',
          'evaluating',
          'satisfied',
          'max_iterations_reached',
          'failed',
          'interrupted',
        ].map((r) => Type.Literal(r)),
      ),
      iteration: Type.Integer({ minimum: 0 }),
      explanation: Nullable(Type.String()),
      completed_at: Nullable(Timestamp),
    }),
  ),
  archived_at: Nullable(Timestamp),
  terminated_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Session = Static<typeof Session>;

// ---------------------------------------------------------------------------------------------
// Model card (extension)

const ModelCardFields = {
  id: Id('mc_'),
  type: Type.Literal('model_card'),
  model_id: Type.String(),
  provider: Type.String(),
  model: Type.String(),
  base_url: Nullable(Type.String()),
  custom_headers: StringMap,
  /** The last four characters of the key; the key itself is never served. */
  api_key_preview: Type.String(),
  pi_config: Nullable(Type.Record(Type.String(), Type.Unknown())),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const ModelCardOut = Obj(ModelCardFields);
export type ModelCardOut = Static<typeof ModelCardOut>;

/** The create answer: the card plus the capability probe's outcome. */
export const ModelCardCreated = Obj({
  ...ModelCardFields,
  probe: Obj({
    ok: Nullable(Type.Boolean()),
    status: Type.Optional(Type.Integer()),
    reason: Type.Optional(Type.String()),
  }),
});
export type ModelCardCreated = Static<typeof ModelCardCreated>;

// ---------------------------------------------------------------------------------------------
// Envelopes

/** List envelope: the SDK's PageCursor/BidirectionalPageCursor fields plus Page's ids. */
const PageFields = {
  has_more: Type.Boolean(),
  next_page: Nullable(Type.String()),
  /** Absent on the event list (it pages forward only). */
  prev_page: Type.Optional(Nullable(Type.String())),
  first_id: Nullable(Type.String()),
  last_id: Nullable(Type.String()),
};
const PageEnvelope = Obj(PageFields);
export const ListPage = <T extends TSchema>(item: T) =>
  Obj({ data: Type.Array(item), ...PageFields });
export type ListPage<T> = Static<typeof PageEnvelope> & { data: T[] };

/** The unpaged `svc` lists (model cards, API keys): every item, `has_more` always false. */
export const FullList = <T extends TSchema>(item: T) =>
  Obj({ data: Type.Array(item), has_more: Type.Boolean() });

/** Hard-delete confirmation, e.g. `{id, type: 'session_deleted'}`. */
export const Deleted = <T extends string>(type: T) =>
  Obj({ id: Type.String(), type: Type.Literal(type) });

/** Error body: the spec's `{error: {type, message}}` plus the SDK's `type: 'error'` envelope. */
export const ErrorBody = Obj({
  type: Type.Literal('error'),
  error: Obj({
    /** One of ERROR_STATUS's keys (typed as string so the edge can pass any ApiError type through). */
    type: Type.Unsafe<string>(Type.Union(Object.keys(ERROR_STATUS).map((k) => Type.Literal(k)))),
    message: Type.String(),
    /** A memory path conflict (409): the path and memory that blocked the write (SDK). */
    conflicting_path: Type.Optional(Type.String()),
    conflicting_memory_id: Type.Optional(Type.String()),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  request_id: Type.String(),
});
export type ErrorBody = Static<typeof ErrorBody>;
