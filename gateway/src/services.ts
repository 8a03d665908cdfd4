import type {
  CostService,
  EvalService,
  IntegrationService,
  WebhookIngest,
  AgentService,
  AuthService,
  ConsoleService,
  DashboardService,
  IdentityProviders,
  MemberService,
  CommandBus,
  Config,
  Coordination,
  DeploymentService,
  DocumentStore,
  DreamService,
  EnvironmentService,
  EventLog,
  FileService,
  McpProxy,
  MemorySearchService,
  MemoryService,
  ModelResolver,
  OutputService,
  PlatformMetrics,
  SessionService,
  SkillService,
  VaultService,
  WebhookService,
  WorkService,
} from '@agentfleet/core';

/**
 * The core services the gateway serves, named: what the composition root (server/src) hands
 * buildApp, buildOpsApp and buildMetricsApp. Only app.ts and metricsRoute.ts take it whole;
 * every route, GraphQL and stream module takes the members it uses (a `Pick` of this, or a
 * narrower interface), so a call can be followed from a route to the service that answers it.
 * No member is a raw collection: every read and write goes through its feature's service.
 */
export interface GatewayServices {
  config: Config;
  /** /readyz asks the three adapters whether they are connected. */
  store: Pick<DocumentStore, 'healthy'>;
  bus: Pick<CommandBus, 'healthy'>;
  /** Readiness, the rate limiters (tenant and failed authentications). */
  coordination: Pick<Coordination, 'healthy' | 'rateLimiter'>;
  metrics: PlatformMetrics;
  auth: AuthService;
  /** Console sign-in sessions (cookie): core/src/console. null: the console is off (fleet mode without CONSOLE_SESSION_SECRET). */
  console: ConsoleService | null;
  /** Console users, memberships, invitations, allowed domains (core/src/console/members.ts). */
  members: MemberService;
  /** The console dashboard's counts and recent errors (core/src/console/dashboard.ts). */
  dashboard: DashboardService;
  /** The console's identity providers (core/src/console/identity.ts). */
  identity: IdentityProviders;
  agents: AgentService;
  environments: EnvironmentService;
  vaults: VaultService;
  sessions: SessionService;
  /** The event log: paged lists, the session log, live follow (core/src/events). */
  events: EventLog;
  models: ModelResolver;
  files: FileService;
  outputs: OutputService;
  mcpProxy: McpProxy;
  deployments: DeploymentService;
  work: WorkService;
  webhooks: WebhookService;
  memory: MemoryService;
  memorySearch: MemorySearchService;
  dreams: DreamService;
  skills: SkillService;
  /** Integrations: installs, publications (core/src/integrations/service.ts). */
  integrations: IntegrationService;
  /** Inbound provider webhooks (core/src/integrations/ingest.ts). */
  ingest: WebhookIngest;
  /** The runtime ledger, price card and cost report (core/src/cost). */
  cost: CostService;
  /** Eval runs: start, list, cancel, compare (core/src/evals). */
  evals: EvalService;
}
