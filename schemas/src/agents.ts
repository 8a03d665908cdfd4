import { Type, type Static } from '@sinclair/typebox';
import { Id, Metadata, MetadataPatch, Nullable, Obj, TOOLSET_TYPE } from './common.js';

export const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export const EffortName = Type.Union(EFFORTS.map((e) => Type.Literal(e)));
const EffortObj = Obj({ type: EffortName });

/** Model: a model card handle, or the object form whose controls are versioned with the agent. */
export const ModelConfigParams = Obj({
  id: Type.String({ minLength: 1, maxLength: 256 }),
  effort: Type.Optional(Nullable(Type.Union([EffortName, EffortObj]))),
  speed: Type.Optional(Nullable(Type.Union([Type.Literal('standard'), Type.Literal('fast')]))),
  inference_geo: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' })),
  ),
});
export const ModelParam = Type.Union([
  Type.String({ minLength: 1, maxLength: 256 }),
  ModelConfigParams,
]);

export const Policy = Type.Union([
  Obj({ type: Type.Literal('always_allow') }),
  Obj({ type: Type.Literal('always_ask') }),
  Obj({ type: Type.Literal('auto') }),
]);
const TOOL_NAMES = [
  'bash',
  'edit',
  'read',
  'write',
  'glob',
  'grep',
  'web_fetch',
  'web_search',
] as const;
const ToolConfig = Type.Object(
  {
    name: Type.Union(TOOL_NAMES.map((n) => Type.Literal(n))),
    type: Type.Optional(Type.String()),
    enabled: Type.Optional(Nullable(Type.Boolean())),
    permission_policy: Type.Optional(Nullable(Policy)),
  },
  // web_fetch / web_search carry extra SDK settings (allowed sources, user location).
  { additionalProperties: true },
);
const DefaultConfig = Obj({
  enabled: Type.Optional(Nullable(Type.Boolean())),
  permission_policy: Type.Optional(Nullable(Policy)),
});

export const ToolsetParams = Obj({
  type: Type.Literal(TOOLSET_TYPE),
  configs: Type.Optional(Type.Array(ToolConfig, { maxItems: 16 })),
  default_config: Type.Optional(Nullable(DefaultConfig)),
});
export const McpToolsetParams = Obj({
  type: Type.Literal('mcp_toolset'),
  mcp_server_name: Type.String({ minLength: 1, maxLength: 64 }),
  configs: Type.Optional(
    Type.Array(
      Obj({
        name: Type.String({ minLength: 1 }),
        enabled: Type.Optional(Nullable(Type.Boolean())),
        permission_policy: Type.Optional(Nullable(Policy)),
      }),
    ),
  ),
  default_config: Type.Optional(Nullable(DefaultConfig)),
});
export const ToolExecution = Type.Union([
  Obj({
    type: Type.Literal('http'),
    endpoint: Type.String({ format: 'uri' }),
    method: Type.Optional(Type.String({ pattern: '^(GET|POST|PUT|PATCH|DELETE)$' })),
  }),
  Obj({ type: Type.Literal('sandbox'), command: Type.String({ minLength: 1, maxLength: 4096 }) }),
]);
export const CustomToolParams = Obj({
  type: Type.Literal('custom'),
  name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' }),
  description: Type.String({ maxLength: 10_000 }),
  input_schema: Type.Object({ type: Type.Literal('object') }, { additionalProperties: true }),
  /** Extension: absent means client-executed (agent.custom_tool_use → requires_action). */
  execution: Type.Optional(ToolExecution),
  /**
   * Extension (the SDK's custom tools have none): the permission policy of a server-executed
   * custom tool (`execution` set); a client-executed one only accepts always_allow, as the
   * client answers its calls anyway (core/src/agents/toolPolicy.ts).
   */
  permission_policy: Type.Optional(Nullable(Policy)),
});
export const ToolDefinition = Type.Union([ToolsetParams, McpToolsetParams, CustomToolParams]);
export type ToolDefinition = Static<typeof ToolDefinition>;

export const SkillRef = Type.Union([
  Type.String({ minLength: 1 }),
  Obj({
    skill_id: Type.String({ minLength: 1 }),
    type: Type.Union([Type.Literal('custom'), Type.Literal('anthropic'), Type.Literal('vendor')]),
    version: Type.Optional(Nullable(Type.String())),
  }),
]);

const McpServerName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
const StdioCommand = {
  /** Spawned directly (no shell) inside the session's sandbox; the environment provides it. */
  command: Type.String({ minLength: 1, maxLength: 4096 }),
  args: Type.Optional(Type.Array(Type.String({ maxLength: 32_768 }), { maxItems: 1000 })),
  /**
   * Plain, not sealed: it enters the sandbox (spec McpServerConfig), so no standing credential
   * belongs here; vault credentials reach a server only through the egress proxy.
   */
  env: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 32_768 }))),
};
/**
 * stdio (spec McpServerConfig rule 1): the child process runs inside the session's sandbox,
 * owned by the sandbox agent, speaking MCP over stdin/stdout (core/src/mcp/sandboxTransports.ts).
 * Refused where a deployment has no sandbox (SANDBOX_DRIVER=none: rule 2).
 */
export const McpStdioServer = Obj({
  name: McpServerName,
  type: Type.Literal('stdio'),
  ...StdioCommand,
});
/**
 * The older nested shape (spec McpServerConfig rule 5): the process binds 127.0.0.1:port in the
 * sandbox and is reached with Streamable HTTP there, after waiting up to ready_timeout_ms
 * (default 60000) for the port to accept. Stored and served as sent.
 */
export const McpStdioPortServer = Obj({
  name: McpServerName,
  type: Type.Literal('stdio'),
  stdio: Obj({
    ...StdioCommand,
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    ready_timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
  }),
});

export const McpServerConfig = Type.Union([
  Obj({
    name: McpServerName,
    type: Type.Literal('url'),
    url: Type.String({ format: 'uri' }),
    /** Inline bearer: sealed at rest, never served. */
    authorization_token: Type.Optional(Type.String({ maxLength: 8192 })),
    /**
     * As served. Sent back without a token: true (or absent) keeps the token stored for the same
     * name and url on an update; false removes it.
     */
    has_authorization_token: Type.Optional(Type.Boolean()),
  }),
  McpStdioServer,
  McpStdioPortServer,
]);

const AgentFields = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
  system: Type.Optional(Nullable(Type.String({ maxLength: 200_000 }))),
  tools: Type.Optional(Type.Array(ToolDefinition, { maxItems: 128 })),
  skills: Type.Optional(Type.Array(SkillRef, { maxItems: 64 })),
  environment_id: Type.Optional(Nullable(Id('env_'))),
  mcp_servers: Type.Optional(Type.Array(McpServerConfig, { maxItems: 20 })),
  memory_store_id: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
  harness: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  execution_identity: Type.Optional(
    Nullable(
      Type.Union([
        Obj({ type: Type.Literal('service_account') }),
        Obj({ type: Type.Literal('aws_role'), role_arn: Type.String({ minLength: 1 }) }),
      ]),
    ),
  ),
  multiagent: Type.Optional(
    Nullable(Type.Object({ type: Type.String() }, { additionalProperties: true })),
  ),
};

export const AgentCreate = Obj({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  model: ModelParam,
  metadata: Type.Optional(Metadata),
  ...AgentFields,
});
export type AgentCreate = Static<typeof AgentCreate>;

export const AgentUpdate = Obj({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  model: Type.Optional(ModelParam),
  metadata: Type.Optional(Nullable(MetadataPatch)),
  /** SDK optimistic concurrency: the version the caller last saw. */
  version: Type.Optional(Type.Integer({ minimum: 1 })),
  ...AgentFields,
  tools: Type.Optional(Nullable(Type.Array(ToolDefinition, { maxItems: 128 }))),
  skills: Type.Optional(Nullable(Type.Array(SkillRef, { maxItems: 64 }))),
  mcp_servers: Type.Optional(Nullable(Type.Array(McpServerConfig, { maxItems: 20 }))),
});
export type AgentUpdate = Static<typeof AgentUpdate>;

export const AgentListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  archived: Type.Optional(Type.Boolean()),
  include_archived: Type.Optional(Type.Boolean()),
  'created_at[gte]': Type.Optional(Type.String()),
  'created_at[lte]': Type.Optional(Type.String()),
});
export const AgentRetrieveQuery = Obj({ version: Type.Optional(Type.Integer({ minimum: 1 })) });
export const VersionListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
});

// The served shapes (Agent, AgentSpec, ModelConfig) are schemas in resources.ts.
