/**
 * Deployments and deployment runs (SDK 1.12 `client.beta.deployments` and
 * `client.beta.deploymentRuns`): request bodies as the SDK sends them and the served shapes.
 * Checks the schema cannot express (cron syntax, IANA timezone, referenced ids, event order)
 * are in core/src/deployments/. Proved by test/deployments*.test.ts.
 */
import { Type, type Static } from '@sinclair/typebox';
import { BudgetLimit, Id, Metadata, MetadataPatch, Nullable, Obj, TextBlock } from './common.js';
import { SystemMessageParams, UserMessageParams } from './sessions.js';

const AgentParam = Type.Union([
  Type.String({ minLength: 1, maxLength: 128 }),
  Obj({
    type: Type.Literal('agent'),
    id: Type.String({ minLength: 1, maxLength: 128 }),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
  }),
]);

/** SDK BetaManagedAgentsCronScheduleParams: a 5-field cron plus an IANA timezone. */
export const ScheduleParams = Obj({
  type: Type.Literal('cron'),
  expression: Type.String({ minLength: 1, maxLength: 256 }),
  timezone: Type.String({ minLength: 1, maxLength: 64 }),
});
export type ScheduleParams = Static<typeof ScheduleParams>;

/**
 * SDK BetaManagedAgentsDeploymentInitialEventParams: user.message and system.message;
 * user.define_outcome (outcomes) is refused before validation as not supported yet.
 */
export const DeploymentInitialEvent = Type.Union([UserMessageParams, SystemMessageParams]);
export type DeploymentInitialEvent = Static<typeof DeploymentInitialEvent>;
const InitialEvents = Type.Array(DeploymentInitialEvent, { minItems: 1, maxItems: 50 });

/** Resource params: files are mounted; the other kinds are refused by the service. */
export const DeploymentResourceParam = Type.Union([
  Obj({
    type: Type.Literal('file'),
    file_id: Type.String({ minLength: 1, maxLength: 128 }),
    mount_path: Type.Optional(Nullable(Type.String({ maxLength: 4096 }))),
  }),
  Type.Object(
    { type: Type.Union([Type.Literal('github_repository'), Type.Literal('memory_store')]) },
    { additionalProperties: true },
  ),
]);
export type DeploymentResourceParam = Static<typeof DeploymentResourceParam>;

const Name = Type.String({ minLength: 1, maxLength: 256 });
const Description = Nullable(Type.String({ maxLength: 2048 }));
const VaultIds = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 50 });
const Resources = Type.Array(DeploymentResourceParam, { maxItems: 500 });

export const DeploymentCreate = Obj({
  agent: AgentParam,
  environment_id: Id('env_'),
  initial_events: InitialEvents,
  name: Name,
  budget: Type.Optional(Nullable(BudgetLimit)),
  description: Type.Optional(Description),
  metadata: Type.Optional(Metadata),
  resources: Type.Optional(Resources),
  schedule: Type.Optional(Nullable(ScheduleParams)),
  vault_ids: Type.Optional(VaultIds),
});
export type DeploymentCreate = Static<typeof DeploymentCreate>;

export const DeploymentUpdate = Obj({
  agent: Type.Optional(AgentParam),
  budget: Type.Optional(Nullable(BudgetLimit)),
  description: Type.Optional(Description),
  environment_id: Type.Optional(Id('env_')),
  initial_events: Type.Optional(InitialEvents),
  metadata: Type.Optional(Nullable(MetadataPatch)),
  name: Type.Optional(Name),
  resources: Type.Optional(Nullable(Resources)),
  schedule: Type.Optional(Nullable(ScheduleParams)),
  vault_ids: Type.Optional(Nullable(VaultIds)),
});
export type DeploymentUpdate = Static<typeof DeploymentUpdate>;

const StatusLit = Type.Union([Type.Literal('active'), Type.Literal('paused')]);

export const DeploymentListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  agent_id: Type.Optional(Type.String({ maxLength: 256 })),
  'created_at[gte]': Type.Optional(Type.String()),
  'created_at[lte]': Type.Optional(Type.String()),
  include_archived: Type.Optional(Type.Boolean()),
  status: Type.Optional(StatusLit),
});
export type DeploymentListQuery = Static<typeof DeploymentListQuery>;

export const DeploymentRunListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  'created_at[gt]': Type.Optional(Type.String()),
  'created_at[gte]': Type.Optional(Type.String()),
  'created_at[lt]': Type.Optional(Type.String()),
  'created_at[lte]': Type.Optional(Type.String()),
  deployment_id: Type.Optional(Type.String({ maxLength: 256 })),
  has_error: Type.Optional(Type.Boolean()),
  trigger_type: Type.Optional(Type.Union([Type.Literal('schedule'), Type.Literal('manual')])),
});
export type DeploymentRunListQuery = Static<typeof DeploymentRunListQuery>;

/** SDK BetaManagedAgentsDeploymentRun error types (every `…RunErrorObject`). */
export const DEPLOYMENT_RUN_ERROR_TYPES = [
  'environment_archived_error',
  'agent_archived_error',
  'environment_not_found_error',
  'vault_not_found_error',
  'vault_archived_error',
  'file_not_found_error',
  'memory_store_archived_error',
  'skill_not_found_error',
  'session_resource_not_found_error',
  'workspace_archived_error',
  'organization_disabled_error',
  'session_rate_limited_error',
  'session_creation_rejected_error',
  'unknown_error',
  'self_hosted_resources_unsupported_error',
  'mcp_egress_blocked_error',
] as const;
export type DeploymentRunErrorType = (typeof DEPLOYMENT_RUN_ERROR_TYPES)[number];
/** The run errors that pause a deployment when a scheduled fire records them (SDK PausedReason). */
export const AUTO_PAUSING_RUN_ERRORS: ReadonlySet<DeploymentRunErrorType> = new Set([
  'environment_archived_error',
  'agent_archived_error',
  'environment_not_found_error',
  'vault_not_found_error',
  'file_not_found_error',
  'session_resource_not_found_error',
  'workspace_archived_error',
  'organization_disabled_error',
  'memory_store_archived_error',
  'skill_not_found_error',
  'vault_archived_error',
  'unknown_error',
  'self_hosted_resources_unsupported_error',
  'mcp_egress_blocked_error',
]);

const Time = Type.String();
const AgentRef = Obj({ id: Type.String(), type: Type.Literal('agent'), version: Type.Integer() });
const ErrorTypeLit = Type.Union(DEPLOYMENT_RUN_ERROR_TYPES.map((t) => Type.Literal(t)));

export const DeploymentRun = Obj({
  id: Type.String(),
  type: Type.Literal('deployment_run'),
  agent: AgentRef,
  created_at: Time,
  deployment_id: Type.String(),
  error: Nullable(Obj({ type: ErrorTypeLit, message: Type.String() })),
  session_id: Nullable(Type.String()),
  trigger_context: Type.Union([
    Obj({ type: Type.Literal('schedule'), scheduled_at: Time }),
    Obj({ type: Type.Literal('manual') }),
  ]),
});
export type DeploymentRun = Static<typeof DeploymentRun>;

export const Deployment = Obj({
  id: Type.String(),
  type: Type.Literal('deployment'),
  agent: AgentRef,
  archived_at: Nullable(Time),
  created_at: Time,
  description: Nullable(Type.String()),
  environment_id: Type.String(),
  initial_events: Type.Array(
    Type.Union([
      UserMessageParams,
      Obj({ type: Type.Literal('system.message'), content: Type.Array(TextBlock) }),
    ]),
  ),
  metadata: Type.Record(Type.String(), Type.String()),
  name: Type.String(),
  paused_reason: Nullable(
    Type.Union([
      Obj({ type: Type.Literal('manual') }),
      Obj({ type: Type.Literal('error'), error: Obj({ type: ErrorTypeLit }) }),
    ]),
  ),
  resources: Type.Array(
    Obj({
      type: Type.Literal('file'),
      file_id: Type.String(),
      mount_path: Type.Optional(Nullable(Type.String())),
    }),
  ),
  schedule: Nullable(
    Obj({
      type: Type.Literal('cron'),
      expression: Type.String(),
      timezone: Type.String(),
      last_run_at: Nullable(Time),
      upcoming_runs_at: Type.Array(Time),
    }),
  ),
  status: StatusLit,
  updated_at: Time,
  vault_ids: Type.Array(Type.String()),
  budget: Type.Optional(Nullable(BudgetLimit)),
});
export type Deployment = Static<typeof Deployment>;
