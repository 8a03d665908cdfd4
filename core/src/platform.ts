import type { Config } from './config/config.js';
import { SecretBox } from './crypto.js';
import { TurnState } from './sessions/turnState.js';
import type { StoreRouter } from './store/collections.js';
import type { CommandBus } from './bus/port.js';
import type { Coordination } from './coordination/port.js';
import type { DocumentStore } from './store/port.js';
import { COLLECTIONS, openCollections, type Collections } from './store/collections.js';
import { type AgentDoc } from './agents/records.js';
import {
  AGENT_CACHE_MAX,
  DocReadCache,
  InvalidatingCollection,
  QUERY_CACHE_MAX,
  QueryReadCache,
  SHARED_QUERY_CACHE_TTL_MS,
  announceWrites,
} from './store/readCache.js';
import { AgentService } from './agents/agents.js';
import { AuthService } from './auth/auth.js';
import { EnvironmentService } from './environments/environments.js';
import { VaultService } from './vaults/vaults.js';
import { EventLog } from './events/log.js';
import { ModelResolver } from './models/models.js';
import { createProvider } from './models/providers.js';
import { createEgressPolicy, type EgressPolicy } from './egress/policy.js';
import { egressFetch, type HttpFetch } from './egress/dispatcher.js';
import { SessionService } from './sessions/sessions.js';
import { platformMetrics, type PlatformMetrics } from './metrics.js';
import { FileService, OutputService } from './files/files.js';
import type { ObjectStore } from './objects/port.js';
import { createLogger } from './log.js';
import { McpProxy } from './mcp/proxy.js';
import { validateOAuthCredential } from './mcp/validate.js';
import { DeploymentService } from './deployments/index.js';
import { WorkService, type WorkWebhookEmitter } from './work/index.js';
import { emitSessionStatusWebhooks, WebhookService } from './webhooks/index.js';
import { MemoryService } from './memory/index.js';
import { MemorySearchService } from './memory/search/index.js';
import { DreamService } from './dreams/index.js';
import { SkillService } from './skills/skills.js';

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
   * (core/src/store/readCache.ts). Unset for shared stores (MongoDB, FerretDB) and overrides.
   */
  exclusiveStore?: boolean;
  close(): Promise<void>;
}

/**
 * Everything gateway and workers share: the adapters given by the composition root and the
 * domain services.
 */
export interface Platform {
  config: Config;
  store: DocumentStore;
  bus: CommandBus;
  coordination: Coordination;
  collections: Collections;
  secrets: SecretBox;
  auth: AuthService;
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
  close(): Promise<void>;
}

/** The domain services on the given adapters (which the platform closes with itself). */
export async function createPlatform(config: Config, adapters: Adapters): Promise<Platform> {
  const store = adapters.store;
  await store.ready();
  const { bus, coordination, router, objects } = adapters;
  const collections = openCollections(router);
  // One process owns the embedded store: agents are read through an exact cache there.
  const agentCache = adapters.exclusiveStore ? new DocReadCache<AgentDoc>(AGENT_CACHE_MAX) : null;
  if (agentCache)
    collections.agents = new InvalidatingCollection(COLLECTIONS.agents, router, agentCache);
  // Read on every turn, written rarely: their lookups are kept until the next write, which a
  // shared store's processes announce to each other (./store/readCache.ts QueryReadCache).
  const announcers: Array<() => Promise<void>> = [];
  const shared = !adapters.exclusiveStore;
  for (const name of ['modelCards', 'webhookEndpoints'] as const) {
    const cache = new QueryReadCache(QUERY_CACHE_MAX, shared ? SHARED_QUERY_CACHE_TTL_MS : 0);
    const spec = COLLECTIONS[name];
    const writes = shared ? await announceWrites(coordination.pubsub, spec.name, cache) : null;
    if (writes) announcers.push(writes.stop);
    (collections as Record<typeof name, unknown>)[name] = new InvalidatingCollection(
      spec,
      router,
      cache,
      writes?.announce,
    );
  }
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
    () => agentCache?.size ?? 0,
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
  const environments = new EnvironmentService(collections, baseImages);
  const sessions = new SessionService(
    collections,
    agents,
    models,
    events,
    bus,
    coordination.pubsub,
    baseImages,
  );
  const auth = new AuthService(collections, config.operatorKeyHash);
  await auth.bootstrap();
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
    source: {
      store: (tenant, id) => collections.memoryStores.get(tenant, id),
      memories: (tenant, storeId, ids) =>
        collections.memories.find(tenant, { store_id: storeId, _id: { $in: ids } }),
      count: (tenant, storeId) => collections.memories.count(tenant, { store_id: storeId }),
      page: (tenant, storeId, afterId, limit) =>
        collections.memories.find(
          tenant,
          { store_id: storeId, _id: { $gt: afterId } },
          { sort: { _id: 1 }, limit },
        ),
    },
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
  const dreams = new DreamService({
    c: collections,
    memory,
    models,
    events,
    bus,
    config: { ...config.dreams, maxTokens: config.turn.maxTokens },
    log: createLogger(config.logLevel, { component: 'dreams' }),
  });
  const platform: Platform = {
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
      for (const stop of announcers) await stop().catch(() => {});
      await mcpProxy.close();
      await adapters.close();
    },
  };
  return platform;
}
