import { join, resolve } from 'node:path';
import { sha256 } from '../crypto.js';
import { parsePrivateHostRules, type PrivateHostRule } from '../egress/policy.js';
import { parseStoreBackends } from './storeBackends.js';
import { int, parseHttpConfig, type Env, type HttpConfig } from './http.js';
import { parseSandboxHostUser } from './sandboxUser.js';
import { refuseMcpSigningKey } from './mcpSigning.js';

export type Role = 'all' | 'gateway' | 'worker';

/**
 * One typed config object, parsed once at start. Nothing else reads process.env.
 *
 * Parsing is pure: loadConfig reads only the environment it is given (no file is read, created
 * or written). The secrets an embedded data dir may hold instead of the environment (root
 * secret, operator key hash) are resolved and created by dataDir.ts, after start-up checks
 * passed (test/operator-key.test.ts 'loadConfig writes nothing').
 */
export interface Config {
  role: Role;
  host: string;
  port: number;
  dataDir: string;
  /** SHA-256 of the operator/bootstrap API key (API_KEY, or the data dir's operator-key.sha256). */
  operatorKeyHash: string;
  /** PLATFORM_ROOT_SECRET, or the data dir's root-secret. */
  rootSecret: string;
  vendor: { apiKey: string; baseUrl?: string } | null;
  rateLimit: {
    perMinute: number;
    /** Failed authentications per client address per minute before it gets 429 (AUTH_FAILURES_PER_MINUTE). */
    authFailuresPerMinute: number;
    /** Failed authentications of all addresses together per minute before unknown keys get 429 (AUTH_FAILURES_GLOBAL_PER_MINUTE). */
    authFailuresGlobalPerMinute: number;
    /** A GraphQL operation of cost c takes floor(c / this) rate-limit tokens on top of its request's one (GRAPHQL_COST_PER_RATE_LIMIT_TOKEN). */
    graphqlCostPerToken: number;
  };
  /** GraphQL document limits (graphql-armor): depth, aliases, cost and tokens per operation. */
  graphqlLimits: { maxDepth: number; maxAliases: number; maxCost: number; maxTokens: number };
  /** Connection timeouts and caps, open streams per tenant, trusted proxies (./http.ts). */
  http: HttpConfig;
  /** METRICS_LISTEN: /metrics served only there, without auth; null = on the API port, operator key required. */
  metricsListen: { host: string; port: number } | null;
  turn: {
    maxModelRequests: number;
    maxTokens: number;
    leaseTtlMs: number;
    recoveryScanMs: number;
    /** RECOVERY_SCAN_BATCH: run records and pending sessions a recovery scan reads of each. */
    recoveryScanBatch: number;
    maxRecoveries: number;
    maxConcurrent: number;
    /** MCP_DISCOVERY_TIMEOUT_MS: connect + tools/list bound per MCP server per turn (spec: 15 s). */
    mcpDiscoveryMs: number;
  };
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  sandbox: {
    driver: 'local' | 'nomad' | 'none';
    rootDir: string;
    sleepAfterMs: number;
    webSearch: { url: string; apiKey: string; flavor?: 'brave' | 'generic' } | null;
    nomad: {
      address: string;
      token: string | null;
      namespace: string | null;
      region: string | null;
    } | null;
    /** SANDBOX_HOST_UID/GID: the host user local sandboxes run as under root (./sandboxUser.ts). */
    hostUser: { uid: number; gid: number } | null;
    /** SANDBOX_UNSAFE_NO_LIMITS=true: sandboxes run without process/memory/CPU/disk limits (and the worker starts on a host that can enforce none). */
    unsafeNoLimits: boolean;
    /** SANDBOX_NOMAD_BASE_IMAGES=true: base_image runs on Nomad's docker driver. Off by default (refused): its
     * containers have Docker's bridge network, not only the session proxy (firewall it first). */
    nomadBaseImages: boolean;
    /**
     * SANDBOX_NOMAD_PROXY_ADVERTISE (+ SANDBOX_NOMAD_PROXY_BIND, default the same address): the
     * address Nomad tasks reach this worker at; each Nomad sandbox then gets its session's
     * outbound proxy there (TCP, per-session password) with the egress CA. Unset: Nomad
     * sandboxes have no network at all.
     */
    nomadProxy: { bind: string; advertise: string } | null;
    /** SANDBOX_MAX_PROCESSES / SANDBOX_MAX_MEMORY_MB / SANDBOX_MAX_DISK_MB: caps on every sandbox, below its instance size's. */
    limitCaps: { processes?: number; memoryMb?: number; diskMb?: number };
    /** Environment packages (sandbox/packages/): SANDBOX_PACKAGES_BUILD_TIMEOUT_MS per package manager (default 10 min), SANDBOX_PACKAGES_MAX_MB per layer (default 2048). */
    packages: { buildTimeoutMs: number; maxLayerMb: number };
  };
  /**
   * OBJECT_STORE: where snapshots, outputs and files live. 'gridfs': GridFS on the MongoDB of
   * MONGODB_URL (or STORE_BACKENDS.default), shared by every machine; 'dir': OBJECT_STORE_DIR,
   * shared by the processes of one machine. Default: gridfs when MongoDB is configured, else dir.
   */
  objectStore: 'dir' | 'gridfs';
  objectStoreDir: string;
  /** STORE_SYNC for the embedded store: 'normal' (default, survives kill -9) or 'full' (fsync per commit, survives power loss). */
  storeSync: 'normal' | 'full';
  maxFileBytes: number;
  /** Session outputs synced from sandboxes: quota per file and per session, in bytes. */
  outputs: { maxFileBytes: number; maxSessionBytes: number };
  /** On SIGTERM, in-flight HTTP requests get this long before connections are cut. */
  shutdownGraceMs: number;
  /** SSE_MAX_BUFFERED_BYTES: an SSE stream's bytes not yet taken by its client before it is cut as a slow consumer (gateway/src/sse.ts). */
  sseMaxBufferedBytes: number;
  /** Egress policy for requests made on a tenant's behalf (core/src/egress). */
  egress: {
    /** EGRESS_ALLOW_PRIVATE_HOSTS: private destinations the operator opens (`host` or `host:port`). */
    allowPrivateHosts: PrivateHostRule[];
    /**
     * EGRESS_CA_CERTS: a file of PEM certificates the session proxy's upstream TLS trusts besides
     * the system store (private upstreams; tests). Read by the sandbox runtime at start.
     */
    caCertsFile: string | null;
  };
  /**
   * Skill sources (core/src/skills/sources): SKILL_SOURCES_ALLOW_HOSTS, comma-separated `host` or
   * `host:port` entries (same syntax as EGRESS_ALLOW_PRIVATE_HOSTS) whose private or loopback
   * addresses skill sources may use (intranet sources); every other source must resolve to a
   * public address. EGRESS_ALLOW_PRIVATE_HOSTS opens a host for skill sources too.
   */
  skillSources: { allowHosts: PrivateHostRule[] };
  /** MCP proxy (core/src/mcp/proxy.ts): MCP_PROXY_MAX_BODY_BYTES caps a forwarded request body (default 4 MiB). */
  mcpProxy: { maxBodyBytes: number };
  /**
   * Memory search (core/src/memory/search): MEMORY_EMBEDDING_MODEL names the model card (by
   * model_id: the store's tenant's card first, else the operator's) that embeds memories of a
   * store without its own `embedding_model`; empty = none (lexical search). MEMORY_SEARCH_MAX_OPEN_INDEXES
   * bounds the in-process indexes kept open (LRU, default 64).
   */
  memorySearch: { embeddingModel: string | null; maxOpenIndexes: number };
  /** Deployment scheduler (core/src/deployments): DEPLOYMENT_TICK_MS between worker ticks (default 5000; 0 = no timer). */
  deployments: { tickMs: number };
  /**
   * Dreams (core/src/dreams): DREAM_MAX_RUN_MS bounds one dream's run (default 600000; over it
   * the dream fails with error type `timeout`); DREAM_SCAN_MS between the worker's scans for
   * dreams whose command was lost or whose worker died (default 10000; 0 = no timer).
   */
  dreams: { maxRunMs: number; scanMs: number };
  /**
   * Outbound webhooks (core/src/webhooks). `deploymentEndpoint`: SVC_MANAGED_AGENTS_WEBHOOK_URL
   * with SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY (`whsec_` + base64), receiving every tenant's
   * events; `organizationId`: SVC_MANAGED_AGENTS_ORGANIZATION_ID (else the workspace id);
   * WEBHOOK_SCAN_MS between the worker's due-retry scans (default 5000; 0 = no timer);
   * WEBHOOK_TIMEOUT_MS per attempt (default 10000).
   */
  webhooks: {
    deploymentEndpoint: { url: string; signingKey: string } | null;
    organizationId: string | null;
    scanMs: number;
    timeoutMs: number;
  };
  infra: {
    kafkaBrokers: string | null;
    mongodbUrl: string | null;
    redisUrl: string | null;
    nomadAddr: string | null;
  };
  fleet: {
    /** Prefix of Kafka topics and consumer groups, Redis keys and the MongoDB database name. */
    namespace: string;
    kafkaPartitions: number;
    kafkaReplicationFactor: number;
    /** A dead worker's partitions move to another after this long. */
    kafkaSessionTimeoutMs: number;
    kafkaHeartbeatIntervalMs: number;
    perTenantDb: boolean;
    storeBackends: StoreBackends | null;
  };
}

/**
 * STORE_BACKENDS: named MongoDB backends and tenant placement, e.g.
 * {"default":"mongodb://a:27017/agentfleet","backends":{"eu":"mongodb://b:27017/agentfleet"},"tenants":{"tnt_acme":"eu"}}.
 * A tenant not listed lives on `default` (MONGODB_URL when `default` is omitted).
 */
export interface StoreBackends {
  default: string | null;
  backends: Record<string, string>;
  tenants: Record<string, string>;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** The config fields an embedded data dir may hold instead of the environment. */
export type DataDirSecret = 'rootSecret' | 'operatorKeyHash';
/** What loadConfig returns: those fields only as the environment sets them (null: not set; dataDir.ts resolves them). */
export type ParsedConfig = Omit<Config, DataDirSecret> & {
  rootSecret: string | null;
  operatorKeyHash: string | null;
};

export function loadConfig(role: Role, env: Env = process.env): ParsedConfig {
  const problems: string[] = [];
  const infra = {
    kafkaBrokers: env.KAFKA_BROKERS || null,
    mongodbUrl: env.MONGODB_URL || null,
    redisUrl: env.REDIS_URL || null,
    nomadAddr: env.NOMAD_ADDR || null,
  };
  const sandboxDriver = (env.SANDBOX_DRIVER || (infra.nomadAddr ? 'nomad' : 'local')) as
    'local' | 'nomad' | 'none';
  if (!['local', 'nomad', 'none'].includes(sandboxDriver))
    problems.push("SANDBOX_DRIVER must be 'local', 'nomad' or 'none'");
  if (sandboxDriver === 'nomad' && !infra.nomadAddr)
    problems.push('SANDBOX_DRIVER=nomad needs NOMAD_ADDR');
  const sleepAfterMs = int(env, 'SANDBOX_SLEEP_AFTER_MS', 5 * 60_000, problems, 100, 24 * 3600_000);
  const packageBuildTimeoutMs = int(
    env,
    'SANDBOX_PACKAGES_BUILD_TIMEOUT_MS',
    10 * 60_000,
    problems,
    1000,
    6 * 3600_000,
  );
  const packageLayerMaxMb = int(env, 'SANDBOX_PACKAGES_MAX_MB', 2048, problems, 1, 1024 * 1024);
  if (env.SANDBOX_UNSAFE_NO_LIMITS && !['true', 'false'].includes(env.SANDBOX_UNSAFE_NO_LIMITS))
    problems.push("SANDBOX_UNSAFE_NO_LIMITS must be 'true' or 'false'");
  if (env.SANDBOX_NOMAD_BASE_IMAGES && !['true', 'false'].includes(env.SANDBOX_NOMAD_BASE_IMAGES))
    problems.push("SANDBOX_NOMAD_BASE_IMAGES must be 'true' or 'false'");
  const limitCap = (name: string, min: number, max: number) =>
    env[name] ? int(env, name, 0, problems, min, max) : undefined;
  const sandboxLimitCaps = {
    processes: limitCap('SANDBOX_MAX_PROCESSES', 16, 1_000_000),
    memoryMb: limitCap('SANDBOX_MAX_MEMORY_MB', 32, 16 * 1024 * 1024),
    diskMb: limitCap('SANDBOX_MAX_DISK_MB', 16, 16 * 1024 * 1024),
  };
  const maxFileBytes = int(
    env,
    'MAX_FILE_BYTES',
    32 * 1024 * 1024,
    problems,
    1,
    1024 * 1024 * 1024,
  );
  const outputs = {
    maxFileBytes: int(env, 'OUTPUT_MAX_FILE_BYTES', 100 * 1024 * 1024, problems, 1, 64 * 1024 ** 3),
    maxSessionBytes: int(env, 'OUTPUT_MAX_SESSION_BYTES', 1024 ** 3, problems, 1, 1024 ** 4),
  };
  if (outputs.maxFileBytes > outputs.maxSessionBytes)
    problems.push('OUTPUT_MAX_FILE_BYTES must not be larger than OUTPUT_MAX_SESSION_BYTES');
  if (env.WEB_SEARCH_URL && !/^https?:\/\//.test(env.WEB_SEARCH_URL))
    problems.push('WEB_SEARCH_URL must be an http(s) URL');
  if (env.WEB_SEARCH_URL && !env.WEB_SEARCH_API_KEY)
    problems.push('WEB_SEARCH_URL needs WEB_SEARCH_API_KEY');
  if (env.WEB_SEARCH_FLAVOR && !['brave', 'generic'].includes(env.WEB_SEARCH_FLAVOR))
    problems.push("WEB_SEARCH_FLAVOR must be 'brave' or 'generic'");
  if (infra.mongodbUrl && !/^mongodb(\+srv)?:\/\//.test(infra.mongodbUrl))
    problems.push('MONGODB_URL must be a mongodb:// URL');
  if (infra.redisUrl && !/^rediss?:\/\//.test(infra.redisUrl))
    problems.push('REDIS_URL must be a redis:// URL');
  if (
    infra.kafkaBrokers &&
    !infra.kafkaBrokers.split(',').every((b) => /^[^:,\s]+:\d+$/.test(b.trim()))
  )
    problems.push('KAFKA_BROKERS must be a comma-separated list of host:port');
  const storeBackends = env.STORE_BACKENDS
    ? parseStoreBackends(env.STORE_BACKENDS, problems)
    : null;
  if (storeBackends && !storeBackends.default && !infra.mongodbUrl)
    problems.push('STORE_BACKENDS needs a "default" backend or MONGODB_URL');
  const perTenantDb = (env.PER_TENANT_DB_ENABLED ?? 'false') === 'true';
  if (env.PER_TENANT_DB_ENABLED && !['true', 'false'].includes(env.PER_TENANT_DB_ENABLED))
    problems.push("PER_TENANT_DB_ENABLED must be 'true' or 'false'");
  if ((perTenantDb || storeBackends) && !infra.mongodbUrl && !storeBackends?.default)
    problems.push('PER_TENANT_DB_ENABLED / STORE_BACKENDS need MongoDB (MONGODB_URL)');
  const hasMongo = !!(infra.mongodbUrl || storeBackends?.default);
  const objectStore = (env.OBJECT_STORE || (hasMongo ? 'gridfs' : 'dir')) as Config['objectStore'];
  if (!['dir', 'gridfs'].includes(objectStore))
    problems.push("OBJECT_STORE must be 'dir' or 'gridfs'");
  else if (objectStore === 'gridfs' && !hasMongo)
    problems.push('OBJECT_STORE=gridfs needs MongoDB (MONGODB_URL)');
  const storeSync = (env.STORE_SYNC || 'normal') as Config['storeSync'];
  if (!['normal', 'full'].includes(storeSync))
    problems.push("STORE_SYNC must be 'normal' or 'full'");
  const namespace = env.FLEET_NAMESPACE || 'agentfleet';
  if (!/^[a-z][a-z0-9_-]{0,40}$/.test(namespace))
    problems.push('FLEET_NAMESPACE must match ^[a-z][a-z0-9_-]{0,40}$');
  const kafkaPartitions = int(env, 'KAFKA_PARTITIONS', 8, problems, 1, 1024);
  const kafkaReplicationFactor = int(env, 'KAFKA_REPLICATION_FACTOR', 1, problems, 1, 16);
  const kafkaSessionTimeoutMs = int(
    env,
    'KAFKA_SESSION_TIMEOUT_MS',
    30_000,
    problems,
    3_000,
    300_000,
  );
  const kafkaHeartbeatIntervalMs = int(
    env,
    'KAFKA_HEARTBEAT_INTERVAL_MS',
    Math.min(3_000, Math.floor(kafkaSessionTimeoutMs / 3)),
    problems,
    100,
    60_000,
  );
  if (kafkaHeartbeatIntervalMs >= kafkaSessionTimeoutMs)
    problems.push('KAFKA_HEARTBEAT_INTERVAL_MS must be lower than KAFKA_SESSION_TIMEOUT_MS');
  const fleetMode = !!(infra.kafkaBrokers || infra.mongodbUrl || infra.redisUrl);
  if (role !== 'all' && !(infra.kafkaBrokers && infra.mongodbUrl && infra.redisUrl)) {
    problems.push(
      `role '${role}' runs as one process of a fleet: KAFKA_BROKERS, MONGODB_URL and REDIS_URL must all be set (use 'all' for one process on embedded adapters)`,
    );
  }
  if (fleetMode && !env.PLATFORM_ROOT_SECRET)
    problems.push(
      'PLATFORM_ROOT_SECRET is required when any real adapter is configured (every process must share it)',
    );
  if (fleetMode && !env.API_KEY)
    problems.push(
      'API_KEY is required when any real adapter is configured (every process must agree on the operator key)',
    );
  const dataDir = resolve(env.DATA_DIR || '.data');
  const port = int(env, 'PORT', 8080, problems, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel))
    problems.push(`LOG_LEVEL must be one of debug, info, warn, error, silent`);
  const perMinute = int(env, 'RATE_LIMIT_PER_MINUTE', 6000, problems, 1);
  const authFailuresPerMinute = int(env, 'AUTH_FAILURES_PER_MINUTE', 30, problems, 1, 1_000_000);
  const authFailuresGlobalPerMinute = int(
    env,
    'AUTH_FAILURES_GLOBAL_PER_MINUTE',
    1000,
    problems,
    1,
    100_000_000,
  );
  const http = parseHttpConfig(env, problems);
  const graphqlCostPerToken = int(
    env,
    'GRAPHQL_COST_PER_RATE_LIMIT_TOKEN',
    1000,
    problems,
    1,
    1_000_000,
  );
  const graphqlLimits = {
    maxDepth: int(env, 'GRAPHQL_MAX_DEPTH', 10, problems, 1, 100),
    maxAliases: int(env, 'GRAPHQL_MAX_ALIASES', 15, problems, 0, 1000),
    maxCost: int(env, 'GRAPHQL_MAX_COST', 50_000, problems, 1, 10_000_000),
    maxTokens: int(env, 'GRAPHQL_MAX_TOKENS', 2000, problems, 100, 1_000_000),
  };
  let metricsListen: Config['metricsListen'] = null;
  if (env.METRICS_LISTEN) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(env.METRICS_LISTEN.trim());
    if (!m || Number(m[2]) > 65535)
      problems.push(
        `METRICS_LISTEN must be host:port, e.g. 127.0.0.1:9464 (got '${env.METRICS_LISTEN}')`,
      );
    else metricsListen = { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  }
  const shutdownGraceMs = int(env, 'SHUTDOWN_GRACE_MS', 10_000, problems, 0, 600_000);
  const sseMaxBufferedBytes = int(
    env,
    'SSE_MAX_BUFFERED_BYTES',
    8 * 1024 * 1024,
    problems,
    16 * 1024,
    1024 ** 3,
  );
  const deployments = { tickMs: int(env, 'DEPLOYMENT_TICK_MS', 5_000, problems, 0, 60_000) };
  const webhookUrl = env.SVC_MANAGED_AGENTS_WEBHOOK_URL || null;
  const webhookKey = env.SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY || null;
  if (webhookUrl && !/^https?:\/\/[^\s/]/.test(webhookUrl))
    problems.push('SVC_MANAGED_AGENTS_WEBHOOK_URL must be an http(s) URL');
  if (webhookUrl && !webhookKey)
    problems.push('SVC_MANAGED_AGENTS_WEBHOOK_URL needs SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY');
  if (webhookKey && !/^whsec_(?:[A-Za-z0-9+/]{4}){4,}(?:[A-Za-z0-9+/]{2,3}=*)?$/.test(webhookKey))
    problems.push(
      'SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY must be whsec_ followed by a base64 key (at least 12 bytes)',
    );
  const webhooks: Config['webhooks'] = {
    deploymentEndpoint:
      webhookUrl && webhookKey ? { url: webhookUrl, signingKey: webhookKey } : null,
    organizationId: env.SVC_MANAGED_AGENTS_ORGANIZATION_ID || null,
    scanMs: int(env, 'WEBHOOK_SCAN_MS', 5_000, problems, 0, 600_000),
    timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, problems, 100, 120_000),
  };
  const dreams = {
    maxRunMs: int(env, 'DREAM_MAX_RUN_MS', 600_000, problems, 1, 24 * 3600_000),
    scanMs: int(env, 'DREAM_SCAN_MS', 10_000, problems, 0, 600_000),
  };
  const mcpProxy = {
    maxBodyBytes: int(env, 'MCP_PROXY_MAX_BODY_BYTES', 4 * 1024 ** 2, problems, 1, 32 * 1024 ** 2),
  };
  const memorySearch = {
    embeddingModel: env.MEMORY_EMBEDDING_MODEL?.trim() || null,
    maxOpenIndexes: int(env, 'MEMORY_SEARCH_MAX_OPEN_INDEXES', 64, problems, 1, 10_000),
  };
  const allowPrivate = parsePrivateHostRules(env.EGRESS_ALLOW_PRIVATE_HOSTS ?? '');
  problems.push(...allowPrivate.problems);
  const skillSourceHosts = parsePrivateHostRules(env.SKILL_SOURCES_ALLOW_HOSTS ?? '');
  problems.push(
    ...skillSourceHosts.problems.map((m) =>
      m.replace('EGRESS_ALLOW_PRIVATE_HOSTS', 'SKILL_SOURCES_ALLOW_HOSTS'),
    ),
  );
  const turn = {
    maxModelRequests: int(env, 'TURN_MAX_MODEL_REQUESTS', 50, problems, 1, 1000),
    maxTokens: int(env, 'TURN_MAX_TOKENS', 8192, problems, 1, 1_000_000),
    leaseTtlMs: int(env, 'SESSION_LEASE_TTL_MS', 15_000, problems, 1000),
    recoveryScanMs: int(env, 'RECOVERY_SCAN_MS', 5_000, problems, 100),
    recoveryScanBatch: int(env, 'RECOVERY_SCAN_BATCH', 1000, problems, 1, 100_000),
    maxRecoveries: 5,
    maxConcurrent: int(env, 'WORKER_MAX_CONCURRENT_TURNS', 64, problems, 1, 10_000),
    mcpDiscoveryMs: int(env, 'MCP_DISCOVERY_TIMEOUT_MS', 15_000, problems, 100, 600_000),
  };
  if (env.PLATFORM_ROOT_SECRET !== undefined && env.PLATFORM_ROOT_SECRET.length < 32)
    problems.push('PLATFORM_ROOT_SECRET must be at least 32 characters');
  const sandboxHostUser = parseSandboxHostUser(env, problems);
  refuseMcpSigningKey(env, problems);
  if (problems.length) throw new ConfigError(problems);

  const vendorKey = env.ANTHROPIC_API_KEY || env.VENDOR_API_KEY;
  return {
    role,
    host,
    port,
    dataDir,
    operatorKeyHash: env.API_KEY ? sha256(env.API_KEY) : null,
    rootSecret: env.PLATFORM_ROOT_SECRET || null,
    vendor: vendorKey ? { apiKey: vendorKey, baseUrl: env.ANTHROPIC_BASE_URL || undefined } : null,
    rateLimit: {
      perMinute,
      authFailuresPerMinute,
      authFailuresGlobalPerMinute,
      graphqlCostPerToken,
    },
    http,
    graphqlLimits,
    metricsListen,
    shutdownGraceMs,
    sseMaxBufferedBytes,
    egress: {
      allowPrivateHosts: allowPrivate.rules,
      caCertsFile: env.EGRESS_CA_CERTS ? resolve(env.EGRESS_CA_CERTS) : null,
    },
    skillSources: { allowHosts: skillSourceHosts.rules },
    mcpProxy,
    memorySearch,
    dreams,
    deployments,
    webhooks,
    turn,
    logLevel,
    infra,
    sandbox: {
      driver: sandboxDriver,
      rootDir: resolve(env.SANDBOX_ROOT || join(dataDir, 'sandboxes')),
      sleepAfterMs,
      webSearch:
        env.WEB_SEARCH_URL && env.WEB_SEARCH_API_KEY
          ? {
              url: env.WEB_SEARCH_URL,
              apiKey: env.WEB_SEARCH_API_KEY,
              ...(env.WEB_SEARCH_FLAVOR === 'brave' || env.WEB_SEARCH_FLAVOR === 'generic'
                ? { flavor: env.WEB_SEARCH_FLAVOR }
                : {}),
            }
          : null,
      nomad: infra.nomadAddr
        ? {
            address: infra.nomadAddr,
            token: env.NOMAD_TOKEN || null,
            namespace: env.NOMAD_NAMESPACE || null,
            region: env.NOMAD_REGION || null,
          }
        : null,
      hostUser: sandboxHostUser,
      unsafeNoLimits: env.SANDBOX_UNSAFE_NO_LIMITS === 'true',
      nomadBaseImages: env.SANDBOX_NOMAD_BASE_IMAGES === 'true',
      nomadProxy: env.SANDBOX_NOMAD_PROXY_ADVERTISE
        ? {
            advertise: env.SANDBOX_NOMAD_PROXY_ADVERTISE,
            bind: env.SANDBOX_NOMAD_PROXY_BIND || env.SANDBOX_NOMAD_PROXY_ADVERTISE,
          }
        : null,
      packages: { buildTimeoutMs: packageBuildTimeoutMs, maxLayerMb: packageLayerMaxMb },
      limitCaps: Object.fromEntries(
        Object.entries(sandboxLimitCaps).filter(([, v]) => v !== undefined),
      ),
    },
    objectStore,
    storeSync,
    objectStoreDir: resolve(env.OBJECT_STORE_DIR || join(dataDir, 'objects')),
    maxFileBytes,
    outputs,
    fleet: {
      namespace,
      kafkaPartitions,
      kafkaReplicationFactor,
      kafkaSessionTimeoutMs,
      kafkaHeartbeatIntervalMs,
      perTenantDb,
      storeBackends,
    },
  };
}
