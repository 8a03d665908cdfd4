import { Type, type Static } from '@sinclair/typebox';
import {
  BudgetLimit,
  ContentBlock,
  Id,
  Metadata,
  MetadataPatch,
  Nullable,
  Obj,
  TextBlock,
  ImageBlock,
  DocumentBlock,
  SearchResultBlock,
} from './common.js';
import { McpServerConfig, ModelParam, SkillRef, ToolDefinition } from './agents.js';

export const UserMessageParams = Obj({
  type: Type.Literal('user.message'),
  content: Type.Array(ContentBlock, { minItems: 1, maxItems: 100 }),
});
export const UserInterruptParams = Obj({
  type: Type.Literal('user.interrupt'),
  session_thread_id: Type.Optional(Nullable(Type.String())),
});
export const UserCustomToolResultParams = Obj({
  type: Type.Literal('user.custom_tool_result'),
  custom_tool_use_id: Type.String({ minLength: 1 }),
  content: Type.Optional(Type.Array(Type.Union([TextBlock, ImageBlock, DocumentBlock]))),
  is_error: Type.Optional(Nullable(Type.Boolean())),
});
/**
 * SDK BetaManagedAgentsSystemMessageEventParams: text-only system content, at most one per
 * request, last, right after the user event it accompanies (core/src/sessions/inputEvents.ts).
 */
export const SystemMessageParams = Obj({
  type: Type.Literal('system.message'),
  content: Type.Array(TextBlock, { minItems: 1, maxItems: 100 }),
});
/**
 * SDK BetaManagedAgentsUserToolConfirmationEventParams: answers an agent.tool_use (or
 * agent.mcp_tool_use) held by an always_ask (or undecided auto) permission policy. It must name
 * a call of this session still awaiting confirmation (core/src/sessions/toolConfirmation.ts).
 */
export const UserToolConfirmationParams = Obj({
  type: Type.Literal('user.tool_confirmation'),
  tool_use_id: Type.String({ minLength: 1, maxLength: 128 }),
  result: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
  deny_message: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
});
/**
 * SDK BetaManagedAgentsUserToolResultEventParams: a self-hosted worker's result for an
 * agent.tool_use it executed (the ama_worker lane); accepted only on sessions of a self_hosted
 * environment and only for a call awaiting the worker (core/src/sessions/inputEvents.ts).
 */
export const UserToolResultParams = Obj({
  type: Type.Literal('user.tool_result'),
  tool_use_id: Type.String({ minLength: 1, maxLength: 128 }),
  content: Type.Optional(
    Type.Array(Type.Union([TextBlock, ImageBlock, DocumentBlock, SearchResultBlock]), {
      maxItems: 100,
    }),
  ),
  is_error: Type.Optional(Nullable(Type.Boolean())),
});
/** Longest text rubric (SDK BetaManagedAgentsTextRubricParams: 262,144 characters). */
export const MAX_RUBRIC_CHARS = 262_144;
/**
 * SDK BetaManagedAgentsUserDefineOutcomeEventParams: what the agent must produce and how a
 * grader judges it (core/src/outcomes). A file rubric is read as text at send time.
 */
export const UserDefineOutcomeParams = Obj({
  type: Type.Literal('user.define_outcome'),
  description: Type.String({ minLength: 1, maxLength: 100_000 }),
  rubric: Type.Union([
    Obj({
      type: Type.Literal('text'),
      content: Type.String({ minLength: 1, maxLength: MAX_RUBRIC_CHARS }),
    }),
    Obj({ type: Type.Literal('file'), file_id: Type.String({ minLength: 1, maxLength: 128 }) }),
  ]),
  max_iterations: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 20 }))),
});
export const InputEvent = Type.Union([
  UserMessageParams,
  UserDefineOutcomeParams,
  UserInterruptParams,
  UserCustomToolResultParams,
  UserToolConfirmationParams,
  UserToolResultParams,
  SystemMessageParams,
]);
export type InputEvent = Static<typeof InputEvent>;

export const SendEventsBody = Obj({
  events: Type.Array(InputEvent, { minItems: 1, maxItems: 50 }),
});
export type SendEventsBody = Static<typeof SendEventsBody>;

export const MessagesBody = Obj({
  content: Type.Union([
    Type.String({ minLength: 1, maxLength: 1_000_000 }),
    Type.Array(ContentBlock, { minItems: 1, maxItems: 100 }),
  ]),
});

const AgentRef = Type.Union([
  Type.String({ minLength: 1 }),
  Obj({
    type: Type.Literal('agent'),
    id: Type.String({ minLength: 1 }),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
  }),
  Obj({
    type: Type.Literal('agent_with_overrides'),
    id: Type.String({ minLength: 1 }),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
    model: Type.Optional(ModelParam),
    // The same limits as agent create (schemas/src/agents.ts AgentFields).
    system: Type.Optional(Nullable(Type.String({ maxLength: 200_000 }))),
    tools: Type.Optional(Type.Array(ToolDefinition, { maxItems: 128 })),
    skills: Type.Optional(Type.Array(SkillRef, { maxItems: 64 })),
    mcp_servers: Type.Optional(Type.Array(McpServerConfig, { maxItems: 20 })),
  }),
]);

/** A branch or commit of a repository resource (the SDK's BranchCheckout | CommitCheckout). */
export const RepositoryCheckout = Type.Union([
  Obj({ type: Type.Literal('branch'), name: Type.String({ minLength: 1, maxLength: 255 }) }),
  Obj({ type: Type.Literal('commit'), sha: Type.String({ minLength: 7, maxLength: 64 }) }),
]);

const ResourceParams = Type.Union([
  Obj({
    type: Type.Literal('file'),
    file_id: Type.String({ minLength: 1 }),
    mount_path: Type.Optional(Nullable(Type.String())),
  }),
  // github_repository: the SDK's name; code_host_repository: the spec's (the same resource).
  Obj({
    type: Type.Union([Type.Literal('github_repository'), Type.Literal('code_host_repository')]),
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    authorization_token: Type.Optional(Type.String({ minLength: 1, maxLength: 8192 })),
    checkout: Type.Optional(Nullable(RepositoryCheckout)),
    mount_path: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
  }),
  Obj({
    type: Type.Literal('memory_store'),
    memory_store_id: Type.String({ minLength: 1 }),
    access: Type.Optional(
      Nullable(Type.Union([Type.Literal('read_write'), Type.Literal('read_only')])),
    ),
    instructions: Type.Optional(Nullable(Type.String())),
  }),
]);

export const SessionCreate = Obj({
  agent: AgentRef,
  /** Defaults to the pinned agent version's environment_id (a 400 when neither names one). */
  environment_id: Type.Optional(Id('env_')),
  title: Type.Optional(Nullable(Type.String({ maxLength: 512 }))),
  metadata: Type.Optional(Metadata),
  resources: Type.Optional(Type.Array(ResourceParams, { maxItems: 100 })),
  vault_ids: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 20 })),
  budget: Type.Optional(Nullable(BudgetLimit)),
  initial_events: Type.Optional(Type.Array(UserMessageParams, { maxItems: 50 })),
});
export type SessionCreate = Static<typeof SessionCreate>;

/** sessions.resources.add: a file (the SDK's only kind). */
export const SessionResourceAdd = Obj({
  type: Type.Literal('file'),
  file_id: Type.String({ minLength: 1, maxLength: 128 }),
  mount_path: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
});
/** sessions.resources.update: a repository resource's new token. */
export const SessionResourceUpdate = Obj({
  authorization_token: Type.String({ minLength: 1, maxLength: 8192 }),
});
export const SessionResourceListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  page: Type.Optional(Type.String({ maxLength: 1024 })),
});

export const SessionUpdate = Obj({
  title: Type.Optional(Nullable(Type.String({ maxLength: 512 }))),
  metadata: Type.Optional(Nullable(MetadataPatch)),
  vault_ids: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 20 })),
  budget: Type.Optional(Nullable(BudgetLimit)),
  agent: Type.Optional(
    Obj({
      tools: Type.Optional(Type.Array(ToolDefinition)),
      mcp_servers: Type.Optional(Type.Array(McpServerConfig, { maxItems: 20 })),
    }),
  ),
});
export type SessionUpdate = Static<typeof SessionUpdate>;

export const RUNTIME_STATUSES = ['rescheduling', 'running', 'idle', 'terminated'] as const;
export type RuntimeStatus = (typeof RUNTIME_STATUSES)[number];
const StatusLit = Type.Union(RUNTIME_STATUSES.map((s) => Type.Literal(s)));

export const SessionListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  agent_id: Type.Optional(Type.String()),
  agent_version: Type.Optional(Type.Integer({ minimum: 1 })),
  status: Type.Optional(StatusLit),
  statuses: Type.Optional(Type.Array(StatusLit)),
  include_archived: Type.Optional(Type.Boolean()),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  'created_at[gt]': Type.Optional(Type.String()),
  'created_at[gte]': Type.Optional(Type.String()),
  'created_at[lt]': Type.Optional(Type.String()),
  'created_at[lte]': Type.Optional(Type.String()),
  /** The SDK's filters: deployment_id (sessions its runs created); memory stores do not exist yet. */
  deployment_id: Type.Optional(Type.String({ maxLength: 256 })),
  memory_store_id: Type.Optional(Type.String({ maxLength: 256 })),
});

/** `GET /v1/sessions/:id/threads` (SDK ThreadListParams). */
export const ThreadListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  statuses: Type.Optional(Type.Array(StatusLit)),
});

export const EventListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  after_seq: Type.Optional(Type.Integer({ minimum: 0 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  types: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  'created_at[gt]': Type.Optional(Type.String()),
  'created_at[gte]': Type.Optional(Type.String()),
  'created_at[lt]': Type.Optional(Type.String()),
  'created_at[lte]': Type.Optional(Type.String()),
});

export const StreamQuery = Obj({
  include: Type.Optional(Type.String({ pattern: '^(chunks)(,chunks)*$' })),
  replay: Type.Optional(
    Type.Union([Type.Literal('1'), Type.Literal('true'), Type.Literal('0'), Type.Literal('false')]),
  ),
  event_deltas: Type.Optional(
    Type.Array(Type.Union([Type.Literal('agent.message'), Type.Literal('agent.thinking')])),
  ),
});
