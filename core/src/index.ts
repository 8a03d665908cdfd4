export * from './errors.js';
export * from './ids.js';
export * from './crypto.js';
export * from './config.js';
export { parseTrustProxy, type HttpConfig } from './configHttp.js';
export * from './dataDir.js';
export * from './util.js';
export * from './ports/store.js';
export * from './ports/bus.js';
export * from './ports/coordination.js';
export * from './ports/modelProvider.js';
export { PrefixMemo } from './ports/prefixMemo.js';
export * from './domain/collections.js';
export * from './domain/pagination.js';
export * from './domain/modelInfo.js';
export { AgentService, normalizeModel, normalizeTools, renderSpec } from './domain/agents.js';
export { render as renderAgent } from './domain/agents.js';
export { SHARED_QUERY_CACHE_TTL_MS } from './domain/docReadCache.js';
export { SKILLS_MOUNT_ROOT, skillPromptSection, systemWithSkills } from './domain/sessionSkills.js';
export * from './domain/compactionSettings.js';
export { render as renderEnvironment } from './domain/environments.js';
export { EnvironmentService } from './domain/environments.js';
export * from './domain/vaults.js';
export * from './domain/models.js';
export * from './domain/cardKeys.js';
export { catalogFor, type CatalogModel } from './domain/modelCatalog.js';
export * from './domain/prices.js';
export * from './domain/budget.js';
export * from './domain/eventLog.js';
export * from './domain/liveEvents.js';
export { eventSpillPrefix, SPILL_THRESHOLD_BYTES } from './domain/eventSpill.js';
export * from './domain/sessions.js';
export * from './domain/auth.js';
export * from './domain/files.js';
export {
  awaitsWorker,
  checkInputEvents,
  checkToolResults,
  fileBlockKind,
  fileHasExpired,
  isSelfHostedSession,
  WORKER_TOOLSET_TOOLS,
} from './domain/inputEvents.js';
export * from './platform.js';
export * from './deployments/index.js';
export * from './work/index.js';
export * from './webhooks/index.js';
export {
  isMemoryResource,
  memoryWriteBack,
  systemWithMemory,
  type SessionMemoryResource,
} from './memory/session/index.js';
export * from './memory/index.js';
export * from './dreams/index.js';
export * from './skills/index.js';
export { SkillSourceService } from './skills/sources/service.js';
export { EmbeddedBus } from './adapters/embedded/bus.js';
export {
  embeddedCoordination,
  MemoryLeaseStore,
  MemoryPubSub,
  MemoryRateLimiter,
} from './adapters/embedded/coordination.js';
export { openEmbeddedStore } from './adapters/embedded/documentStore.js';
export {
  openMongoRouter,
  openGridFsObjects,
  databaseOf,
  type MongoRouter,
} from './adapters/mongo/router.js';
export { openKafkaBus, openRedisCoordination } from './adapters/connect.js';
export * from './log.js';
export * from './metrics.js';
export * from './ports/sandbox.js';
export * from './ports/objectStore.js';
export {
  createSandboxRuntime,
  type SandboxRuntime,
  type SandboxDriverWiring,
} from './sandbox/runtime.js';
export {
  urlSourceRefusal,
  type UrlSources,
  type ConversationEvent,
} from './tools/webUrlSources.js';
export type { WebFetchPolicy, WebSearchPolicy } from './sandbox/runtime.js';
export {
  createLocalDriver,
  checkBubblewrap,
  BWRAP_MISSING_MESSAGE,
  type LocalLimitsOptions,
} from './adapters/bubblewrap/driver.js';
export {
  describeMissing,
  noLimitsMessage,
  probeSandboxLimits,
} from './adapters/bubblewrap/limits.js';
export { createSandboxManager, type SandboxManagerService } from './sandbox/manager.js';
export { snapshotPrefix } from './domain/snapshotKeys.js';
export { createDirectoryObjectStore } from './adapters/embedded/objectStore.js';
export { createOutboundProxy, hostPolicy } from './sandbox/proxy.js';
export { simpleCommandProgram } from './sandbox/commandSecrets.js';
export { injectionFor } from './sandbox/vaultInjection.js';
export {
  createCertificateAuthority,
  deploymentCa,
  upstreamTrust,
  writeSandboxTrust,
} from './egress/ca.js';
export { MAX_SUBSTITUTION_BODY_BYTES } from './sandbox/placeholders.js';
export { CLI_REGISTRY, knownCliIds, type CliRegistry, type CliSpec } from './egress/cliRegistry.js';
export { createNomadDriver } from './adapters/nomad/driver.js';
export { nomadAgentCommand, nomadDockerMounts } from './adapters/nomad/command.js';
export { checkHostUser, sandboxProgram } from '@agentfleet/sandbox-agent';
export * from './egress/index.js';
export {
  McpProxy,
  type McpCaller,
  type McpForwardRequest,
  type McpProxyDeps,
} from './mcp/proxy.js';
export { OAuthRefresher, type RenewResult } from './mcp/oauthRefresh.js';
export type * from './mcp/oauthTypes.js';
export * from './mcp/client.js';
export * from './mcp/tools.js';
export * from './mcp/clientStdio.js';
