export * from './errors.js';
export * from './ids.js';
export * from './crypto.js';
export * from './config/config.js';
export { parseTrustProxy, type HttpConfig } from './config/http.js';
export * from './config/dataDir.js';
export * from './util.js';
export * from './store/port.js';
export * from './bus/port.js';
export * from './coordination/port.js';
export * from './models/port.js';
export { PrefixMemo } from './models/prefixMemo.js';
export * from './store/collections.js';
export type * from './auth/records.js';
export type * from './agents/records.js';
export type * from './environments/records.js';
export type * from './sessions/records.js';
export type * from './events/records.js';
export type * from './models/records.js';
export type * from './files/records.js';
export type * from './vaults/records.js';
export * from './api/pagination.js';
export * from './models/info.js';
export { AgentService, normalizeModel, normalizeTools, renderSpec } from './agents/agents.js';
export { render as renderAgent } from './agents/agents.js';
export { SHARED_QUERY_CACHE_TTL_MS } from './store/readCache.js';
export { openCachedCollections, type CachedCollections } from './store/cachedCollections.js';
export { SKILLS_MOUNT_ROOT, skillPromptSection, systemWithSkills } from './sessions/skills.js';
export * from './sessions/compactionSettings.js';
export { render as renderEnvironment } from './environments/environments.js';
export { EnvironmentService } from './environments/environments.js';
export * from './vaults/vaults.js';
export * from './models/models.js';
export * from './models/cardKeys.js';
export { catalogFor, type CatalogModel } from './models/catalog.js';
export * from './models/prices.js';
export { askModel } from './models/ask.js';
export * from './sessions/budget.js';
export * from './events/log.js';
export * from './events/live.js';
export * from './events/list.js';
export { eventSpillPrefix, SPILL_THRESHOLD_BYTES } from './events/spill.js';
export * from './sessions/sessions.js';
export { TurnState, idleClearsPending, remainderIdle, turnIdle } from './sessions/turnState.js';
export * from './sessions/pendingQueue.js';
export * from './sessions/wakeup.js';
export * from './auth/auth.js';
export * from './console/console.js';
export type * from './console/records.js';
export * from './console/members.js';
export * from './console/identity.js';
export * from './console/dashboard.js';
export * from './files/files.js';
export {
  awaitsWorker,
  checkInputEvents,
  checkToolResults,
  fileBlockKind,
  fileHasExpired,
  isSelfHostedSession,
  WORKER_TOOLSET_TOOLS,
} from './sessions/inputEvents.js';
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
export { MemorySearchService } from './memory/search/index.js';
export { collectionsMemorySource } from './memory/search/source.js';
export * from './dreams/index.js';
export * from './skills/index.js';
export { SkillSourceService } from './skills/sources/sources.js';
export * from './log.js';
export * from './metrics.js';
export * from './sandbox/port.js';
export * from './objects/port.js';
export {
  followDestroyRequests,
  sessionSandboxResources,
  sessionSandboxSpec,
  withSessionCredentials,
  type SandboxRuntime,
  type SandboxDriverWiring,
} from './sandbox/runtime.js';
export { ProxyRegistry } from './sandbox/proxies.js';
export { sessionLayerResolver } from './sandbox/packages/sessionLayer.js';
export {
  urlSourceRefusal,
  type UrlSources,
  type ConversationEvent,
} from './tools/webUrlSources.js';
export type { WebFetchPolicy, WebSearchPolicy } from './sandbox/runtime.js';
export { createSandboxManager, type SandboxManagerService } from './sandbox/manager/manager.js';
export { snapshotPrefix } from './sandbox/snapshotKeys.js';
export { createOutboundProxy, hostPolicy } from './egress/proxy/proxy.js';
export { simpleCommandProgram } from './egress/injection/commandSecrets.js';
export { injectionFor } from './egress/injection/vaultInjection.js';
export {
  createCertificateAuthority,
  deploymentCa,
  upstreamTrust,
  writeSandboxTrust,
} from './egress/ca.js';
export { MAX_SUBSTITUTION_BODY_BYTES } from './egress/injection/placeholders.js';
export { CLI_REGISTRY, knownCliIds, type CliRegistry, type CliSpec } from './egress/cliRegistry.js';
export * from './egress/index.js';
export {
  McpProxy,
  type McpCaller,
  type McpForwardRequest,
  type McpProxyDeps,
} from './mcp/proxy.js';
export { OAuthRefresher, type RenewResult } from './mcp/oauthRefresh.js';
export { validateOAuthCredential } from './mcp/validate.js';
export type * from './mcp/oauthTypes.js';
export * from './mcp/client.js';
export * from './mcp/tools.js';
export * from './mcp/clientStdio.js';
export * from './repositories/index.js';
export * from './integrations/index.js';
export * from './cost/index.js';
export * from './evals/index.js';
export * from './outcomes/index.js';
export * from './threads/records.js';
export * from './threads/threads.js';
export { rosterAgent } from './threads/roster.js';
export { COORDINATOR_TOOL_NAMES } from './agents/multiagent.js';
export { aboutAThread } from './threads/relay.js';
