/**
 * The core services a worker uses, named: what the composition root (server/src) hands
 * startWorker (its platform satisfies this structurally). Only startWorker takes it whole; the
 * turn runner takes the turn's part (TurnServices) and every step, tool and job takes the
 * members it uses (a `Pick` of this, or the service itself), so a call can be followed from a
 * step to the service that answers it. No member is a raw collection: every read and write goes
 * through its feature's service (the session turn-state fields through `turnState`,
 * core/src/sessions/turnState.ts; the run records and stored session reads through
 * `sessions.turns`, core/src/sessions/turns.ts).
 */
import type {
  CommandBus,
  Config,
  Conversations,
  Coordination,
  CostService,
  DeploymentService,
  DreamService,
  EvalService,
  EventLog,
  FileService,
  McpForward,
  MemoryService,
  ModelResolver,
  PlatformMetrics,
  SessionService,
  SkillService,
  ThreadActions,
  TurnState,
  WebhookService,
} from '@agentfleet/core';

export interface WorkerServices {
  config: Config;
  /** Turn commands, webhook deliveries and dream runs arrive here; recovery publishes turns. */
  bus: Pick<CommandBus, 'consume' | 'publish'>;
  /** Session leases, the per-session control channel, the memory sweep's lease. */
  coordination: Pick<Coordination, 'leases' | 'pubsub'>;
  metrics: PlatformMetrics;
  events: EventLog;
  /** The stored session and its run record (`turns`), never a collection. */
  sessions: Pick<SessionService, 'turns' | 'threads'>;
  turnState: TurnState;
  models: ModelResolver;
  files: FileService;
  memory: MemoryService;
  skills: SkillService;
  /** The MCP proxy a url MCP server is reached through; absent: url servers cannot connect. */
  mcpProxy?: { forward: McpForward };
  deployments: Pick<DeploymentService, 'tick'>;
  webhooks: WebhookService;
  dreams: DreamService;
  /** Eval runs: the eval runner starts and judges their cases (core/src/evals). */
  evals: Pick<EvalService, 'startCase' | 'finishCase' | 'sweep'>;
  /** The runtime ledger of the cost report (core/src/cost); absent: calls are not recorded. */
  cost?: Pick<CostService, 'record'>;
  /** The tools of the integration thread a session serves (core/src/integrations/actions.ts). */
  integrationActions?: Pick<ThreadActions, 'forSession'>;
  /** Integration threads: provider events into sessions, replies back (core/src/integrations). */
  conversations: Conversations;
}

/** What a turn uses: the services but the jobs'. */
export type TurnServices = Omit<
  WorkerServices,
  'deployments' | 'webhooks' | 'dreams' | 'evals' | 'conversations'
>;
