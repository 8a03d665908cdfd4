/**
 * The platform assembly: the domain services of @agentfleet/core on the adapters the
 * composition root selected (./components.ts), for the gateway and the workers of one process
 * (./start.ts). Nothing else builds a Platform.
 *
 * What it builds, in this order (each step may use only what came before):
 * 1. waits for the document store (`ready`), then opens the collections with their read caches
 *    (core/src/store/cachedCollections.ts: agents exactly on the embedded store, model cards
 *    and webhook endpoints until the next write, announced across a shared store's processes);
 * 2. the root-secret SecretBox, the egress policy and the pinned tenant fetch
 *    (EGRESS_ALLOW_PRIVATE_HOSTS), then the model resolver with the adapters' createProvider,
 *    which seals custom header values of cards stored before they were sealed;
 * 3. metrics (bus counters, agent cache size), the event log, agents, files and outputs,
 *    environments (the base images this deployment runs) and sessions;
 * 4. auth, whose `bootstrap` stores the default tenant (the operator key's); vaults, the MCP proxy and the
 *    OAuth credential validator;
 * 5. deployments, outbound webhooks (session status and lifecycle events emit through them) and
 *    the Work queue of self-hosted environments;
 * 6. skills, memory, memory search (the memory service's search hook and embedding-model
 *    check) and dreams.
 * A failure rejects without closing the adapters: the caller (./start.ts) closes them.
 *
 * `close()` releases, in order: memory search's in-flight index writes (awaited), the tenant
 * fetch's connections, the query caches' write subscriptions, the MCP proxy, then the adapters
 * (`Adapters.close`: bus, coordination, stores; an override is closed by whoever made it).
 *
 * Proved by every harness-based test (test/kit/harness.ts starts through ./start.ts), in
 * particular test/e2e/server/startup.test.ts, components.test.ts (an overridden bus is not
 * closed), persistence.test.ts (restart on the embedded store), operator-key.test.ts,
 * test/e2e/agents/agent-cache.test.ts and test/e2e/fleet/query-cache.test.ts (the caches),
 * test/e2e/models/model-cards-*.test.ts and test/e2e/memory/memory-embedding-model.test.ts.
 */
import {
  Conversations,
  CostService,
  costService,
  ThreadActions,
  IntegrationService,
  WebhookIngest,
  integrationProviders,
  relayIdleTurns,
  relayEvalIdles,
  EvalService,
  AgentService,
  AuthService,
  ConsoleService,
  DashboardService,
  IdentityProviders,
  MemberService,
  type IdentityConfig,
  collectionsMemorySource,
  createEgressPolicy,
  createLogger,
  DeploymentService,
  DreamService,
  egressFetch,
  emitSessionStatusWebhooks,
  EnvironmentService,
  EventLog,
  FileService,
  McpProxy,
  MemorySearchService,
  MemoryService,
  ModelResolver,
  openCachedCollections,
  OutputService,
  platformMetrics,
  SecretBox,
  SessionService,
  SkillService,
  TurnState,
  validateOAuthCredential,
  VaultService,
  WebhookService,
  WorkService,
  type Collections,
  type CommandBus,
  type Config,
  type Coordination,
  type DocumentStore,
  type EgressPolicy,
  type HttpFetch,
  type ObjectStore,
  type PlatformMetrics,
  type StoreRouter,
  type WorkWebhookEmitter,
} from '@agentfleet/core';
import { createProvider } from '@agentfleet/core/adapters';

/**
 * The adapters a platform runs on, chosen by the composition root (server/src/components.ts):
 * core wires nothing by itself. `close` closes them (bus, coordination, then stores).
 */
export interface Adapters {
  store: DocumentStore;
  router: StoreRouter;
  bus: CommandBus;
  coordination: Coordination;
  /** Snapshots, outputs, files: GridFS beside each tenant's documents (fleet), else a directory. */
  objects: ObjectStore;
  /**
   * True only when this process is the store's only writer (the embedded store, which holds its
   * data dir's lock): agent documents are then read through an exact in-process cache
   * (core/src/store/cachedCollections.ts). Unset for shared stores (MongoDB, FerretDB) and overrides.
   */
  exclusiveStore?: boolean;
  close(): Promise<void>;
}

/**
 * The adapters given by the composition root and the domain services on them, built by
 * createPlatform below: ./start.ts hands the gateway (GatewayServices) and the workers the parts
 * they take.
 */
export interface Platform {
  config: Config;
  store: DocumentStore;
  bus: CommandBus;
  coordination: Coordination;
  collections: Collections;
  secrets: SecretBox;
  auth: AuthService;
  /** null: the console is off (fleet mode without CONSOLE_SESSION_SECRET). */
  console: ConsoleService | null;
  members: MemberService;
  dashboard: DashboardService;
  identity: IdentityProviders;
  agents: AgentService;
  environments: EnvironmentService;
  /** Vaults and credentials; `credentialForHost` is the proxies' live lookup. */
  vaults: VaultService;
  sessions: SessionService;
  /** The session turn-state transitions a worker applies (core/src/sessions/turnState.ts). */
  turnState: TurnState;
  models: ModelResolver;
  /**
   * The egress policy for every server-side request to a tenant-supplied URL (model card
   * base_url; MCP servers, webhooks and skill sources): `fetch` resolves once, refuses private
   * addresses the operator did not open (EGRESS_ALLOW_PRIVATE_HOSTS) and connects to the
   * checked address; `policy.resolve` does the same for non-HTTP clients.
   */
  egress: { policy: EgressPolicy; fetch: HttpFetch };
  events: EventLog;
  metrics: PlatformMetrics;
  objects: ObjectStore;
  files: FileService;
  outputs: OutputService;
  /**
   * The MCP proxy (core/src/mcp/proxy.ts): a session's url MCP server with the bearer injected
   * here (inline token, or the session vaults' credential read live), the OAuth refresh flow.
   */
  mcpProxy: McpProxy;
  /** Deployments and their runs; `tick(now)` fires due scheduled minutes (core/src/deployments). */
  deployments: DeploymentService;
  /** The Environment Work API of self-hosted environments (core/src/work). */
  work: WorkService;
  /**
   * Outbound signed webhooks (core/src/webhooks): `emit(tenant, type, {id})`, the tenant
   * endpoints, one delivery's attempt and the due-time scan (`sweep(now)`) the worker's sender
   * (workers/src/jobs/webhookSender.ts) runs.
   */
  webhooks: WebhookService;
  /**
   * Memory stores, memories and versions (core/src/memory): `sweepVersions(now)` is the daily
   * retention sweep; `setSearchHook` is where memory search registers.
   */
  memory: MemoryService;
  /**
   * Memory search (core/src/memory/search): `search(tenant, storeId, query, limit)`, semantic
   * over the store's embedding model card or lexical; registered as the memory service's hook.
   */
  memorySearch: MemorySearchService;
  /**
   * Dreams (core/src/dreams): create/list/cancel, and the claim and run the worker's runner
   * (workers/src/jobs/dreamRunner.ts) calls.
   */
  dreams: DreamService;
  /** Custom and built-in skills with their versions (core/src/skills/skills.ts). */
  skills: SkillService;
  /**
   * Integrations (core/src/integrations): installs and publications (`integrations`), inbound
   * provider webhooks (`ingest`, at the gateway) and conversations (`conversations`, the
   * worker's integration-router); idle turns of thread sessions publish their replies.
   */
  integrations: IntegrationService;
  ingest: WebhookIngest;
  conversations: Conversations;
  /** The runtime ledger, the price card and the cost report (core/src/cost). */
  cost: CostService;
  /**
   * Eval runs (core/src/evals): start/list/cancel/compare at the gateway, cases run by the
   * worker's eval runner; idle turns of case sessions publish their judging.
   */
  evals: EvalService;
  /** The tools a thread session gets from its publication's capabilities (the turn offers them). */
  integrationActions: ThreadActions;
  close(): Promise<void>;
}

/** The domain services on the given adapters (which the platform closes with itself). */
export async function createPlatform(config: Config, adapters: Adapters): Promise<Platform> {
  const store = adapters.store;
  await store.ready();
  const { bus, coordination, router, objects } = adapters;
  // Agents through an exact cache on the embedded store; model cards and webhook endpoints
  // through query caches, a shared store's processes announcing their writes to each other.
  const cached = await openCachedCollections(
    router,
    coordination.pubsub,
    adapters.exclusiveStore === true,
  );
  const { collections } = cached;
  const secrets = new SecretBox(config.rootSecret);
  // Tenants' model card base_urls are under the egress policy (EGRESS_ALLOW_PRIVATE_HOSTS).
  const egressPolicy = createEgressPolicy({ allowPrivateHosts: config.egress.allowPrivateHosts });
  const tenantFetch = egressFetch(egressPolicy);
  const models = new ModelResolver(
    collections,
    secrets,
    config.vendor,
    createProvider,
    egressPolicy,
    tenantFetch,
  );
  // Cards stored before custom header values were sealed: seal them now.
  await models.sealLegacyHeaders();
  const metrics = platformMetrics();
  const bus$ = bus;
  metrics.registry.gauge(
    'agentfleet_bus_commands',
    'Bus command counters of this process (published, handled, retried, dead_lettered)',
    () => {
      const st = bus$.stats();
      return [
        [{ kind: 'published' }, st.published],
        [{ kind: 'handled' }, st.handled],
        [{ kind: 'retried' }, st.retried],
        [{ kind: 'dead_lettered' }, st.deadLettered],
      ];
    },
  );
  const events = new EventLog(collections, coordination.pubsub, metrics, objects);
  // stdio MCP servers run inside sandboxes: refused where there are none (SANDBOX_DRIVER=none)
  const agents = new AgentService(collections, models, secrets, {
    sandboxes: config.sandbox.driver !== 'none',
  });
  metrics.registry.gauge(
    'agentfleet_agent_cache_entries',
    'Agent documents held in the in-process agent cache (embedded store only; 0 elsewhere)',
    () => cached.agentCacheSize(),
  );
  // Snapshots, outputs and files: GridFS in fleet mode (every machine), else a directory
  // (the processes of one machine); chosen by the composition root from OBJECT_STORE.
  const files = new FileService(collections, objects, { maxBytes: config.maxFileBytes });
  const outputs = new OutputService(collections, objects);
  // Which base_image values this deployment can run (core/src/environments/baseImage.ts).
  const baseImages = {
    sandboxDriver: config.sandbox.driver,
    nomadBaseImages: config.sandbox.nomadBaseImages,
  };
  // ... and where repository resources have an egress enforcement point (core/src/repositories).
  const repositorySupport = { ...baseImages, nomadProxy: !!config.sandbox.nomadProxy, secrets };
  const environments = new EnvironmentService(collections, baseImages);
  const sessions = new SessionService(
    collections,
    agents,
    models,
    events,
    bus,
    coordination.pubsub,
    repositorySupport,
  );
  const auth = new AuthService(collections, config.operatorKeyHash);
  await auth.bootstrap();
  const members = new MemberService(collections);
  // Every process that appends events records their session errors for the dashboard.
  const dashboard = new DashboardService(collections, sessions);
  dashboard.recordErrorsOf(events);
  // Fleet mode without CONSOLE_SESSION_SECRET: no console (core/src/config/dataDir.ts).
  const console_ = config.consoleSessionSecret
    ? new ConsoleService(collections, auth, members, config.consoleSessionSecret)
    : null;
  const vaults = new VaultService(collections, secrets);
  const mcpProxy = new McpProxy({
    collections,
    secrets,
    vaults,
    leases: coordination.leases,
    policy: egressPolicy,
    caCertsFile: config.egress.caCertsFile,
    maxBodyBytes: config.mcpProxy.maxBodyBytes,
    log: createLogger(config.logLevel),
  });
  vaults.useValidator((tenant, cred) =>
    validateOAuthCredential(
      { fetch: () => mcpProxy.upstreamFetch(), refresher: mcpProxy.refresher },
      tenant,
      cred,
    ),
  );
  // Deployment runs emit deployment_run.* through platform.webhooks (created below).
  const deployments = new DeploymentService(
    {
      c: collections,
      sessions,
      rateLimiter: coordination.rateLimiter,
      ratePerMinute: config.rateLimit.perMinute,
      webhooks: () => webhooks,
      log: createLogger(config.logLevel, { component: 'deployments' }),
    },
    () => models.hasVendorFallback,
  );
  // Tenant endpoints are reached through the egress policy; session status events emit here.
  const webhooks = new WebhookService({
    c: collections,
    bus,
    secrets,
    policy: egressPolicy,
    tenantFetch,
    config: config.webhooks,
    log: createLogger(config.logLevel, { component: 'webhooks' }),
  });
  emitSessionStatusWebhooks(events, webhooks);
  vaults.useWebhooks(webhooks);
  // Each service emits its objects' lifecycle webhooks once a change is stored (webhooks/port.ts).
  agents.webhooks = environments.webhooks = sessions.webhooks = webhooks;
  // Sessions on self_hosted environments enqueue Work (and the wake-hint webhook).
  const work = new WorkService({
    c: collections,
    leases: coordination.leases,
    pubsub: coordination.pubsub,
    log: createLogger(config.logLevel, { component: 'work' }),
    webhooks: () => (platform as { webhooks?: WorkWebhookEmitter }).webhooks,
  });
  sessions.useWorkQueue((tenant, s) => work.enqueue(tenant, s));
  sessions.useRubricFiles(async (tenant, id) => {
    const { file, data } = await files.content(tenant, id);
    return { mime_type: file.mime_type, data };
  });
  const skills = new SkillService(collections, objects);
  // Agent and session `skills` refs are validated and pinned by it (sessions/skills.ts).
  agents.useSkills(skills);
  const memory = new MemoryService(
    collections,
    createLogger(config.logLevel, { component: 'memory' }),
  );
  memory.webhooks = webhooks;
  // Search follows every committed memory write; vectors persist beside the memories.
  const memorySearch = new MemorySearchService({
    router,
    source: collectionsMemorySource(collections),
    embedding: {
      c: collections,
      secrets,
      tenantFetch,
      platformDefault: config.memorySearch.embeddingModel,
    },
    maxOpenIndexes: config.memorySearch.maxOpenIndexes,
    log: createLogger(config.logLevel, { component: 'memory-search' }),
  });
  memory.setSearchHook(memorySearch.hook);
  memory.setEmbeddingModelCheck(memorySearch.checkEmbeddingModel);
  const cost = costService(collections, config);
  const dreams = new DreamService({
    cost,
    c: collections,
    memory,
    models,
    events,
    bus,
    config: { ...config.dreams, maxTokens: config.turn.maxTokens },
    log: createLogger(config.logLevel, { component: 'dreams' }),
  });
  // Provider HTTP goes through the egress policy, trusting EGRESS_CA_CERTS (as sign-in does).
  const providerFetch: HttpFetch = async (url, init) => (await mcpProxy.upstreamFetch())(url, init);
  const integrationLog = createLogger(config.logLevel, { component: 'integrations' });
  const integrations = new IntegrationService({
    c: collections,
    secrets,
    providers: integrationProviders(config, { fetch: providerFetch, now: Date.now }),
    publicUrl: config.integrationsPublicUrl,
    log: integrationLog,
  });
  const ingest = new WebhookIngest({
    c: collections,
    integrations,
    bus,
    rateLimiter: coordination.rateLimiter,
    limits: {
      perAddressPerMinute: config.webhooksPerAddressPerMinute,
      perTenantPerMinute: config.webhooksPerTenantPerMinute,
    },
    log: integrationLog,
  });
  const conversations = new Conversations({
    c: collections,
    integrations,
    sessions,
    events,
    log: integrationLog,
  });
  relayIdleTurns(events, collections, bus, integrationLog);
  const evalLog = createLogger(config.logLevel, { component: 'evals' });
  const evals = new EvalService({
    c: collections,
    sessions,
    files,
    events,
    bus,
    leases: coordination.leases,
    cost,
    config: {
      ...config.evals,
      checkCommands:
        config.sandbox.driver === 'none' ? 'this deployment has no sandbox driver' : null,
    },
    log: evalLog,
  });
  relayEvalIdles(events, collections, bus, evalLog);
  const integrationActions = new ThreadActions({
    c: collections,
    integrations,
    log: integrationLog,
  });
  const platform: Platform = {
    cost,
    evals,
    integrations,
    integrationActions,
    ingest,
    conversations,
    dreams,
    memory,
    memorySearch,
    skills,
    work,
    webhooks,
    deployments,
    config,
    store,
    bus,
    coordination,
    collections,
    secrets,
    auth,
    console: console_,
    members,
    dashboard,
    // The identity providers' HTTP goes through the egress policy, trusting EGRESS_CA_CERTS.
    identity: new IdentityProviders(identityConfig(config), () => mcpProxy.upstreamFetch()),
    agents,
    environments,
    vaults,
    sessions,
    turnState: new TurnState(collections.sessions),
    models,
    events,
    metrics,
    objects,
    files,
    outputs,
    egress: { policy: egressPolicy, fetch: tenantFetch },
    mcpProxy,
    async close() {
      await memorySearch.idle();
      await tenantFetch.close().catch(() => {});
      await cached.close();
      await mcpProxy.close();
      await adapters.close();
    },
  };
  return platform;
}

/** The console's identity providers from the config (absent settings: that provider is off). */
function identityConfig(config: Config): IdentityConfig {
  return {
    publicUrl: config.publicUrl,
    oidc:
      config.oidcIssuer && config.oidcClientId && config.oidcClientSecret
        ? {
            issuer: config.oidcIssuer,
            clientId: config.oidcClientId,
            clientSecret: config.oidcClientSecret,
          }
        : null,
    github:
      config.githubOAuthClientId && config.githubOAuthClientSecret
        ? {
            clientId: config.githubOAuthClientId,
            clientSecret: config.githubOAuthClientSecret,
            webUrl: config.githubWebUrl,
            apiUrl: config.githubApiUrl,
          }
        : null,
  };
}
