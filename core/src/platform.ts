import type { Config } from './config/config.js';
import type { SecretBox } from './crypto.js';
import type { TurnState } from './sessions/turnState.js';
import type { CommandBus } from './bus/port.js';
import type { Coordination } from './coordination/port.js';
import type { DocumentStore } from './store/port.js';
import type { Collections } from './store/collections.js';
import type { AgentService } from './agents/agents.js';
import type { AuthService } from './auth/auth.js';
import type { EnvironmentService } from './environments/environments.js';
import type { VaultService } from './vaults/vaults.js';
import type { EventLog } from './events/log.js';
import type { ModelResolver } from './models/models.js';
import type { EgressPolicy } from './egress/policy.js';
import type { HttpFetch } from './egress/dispatcher.js';
import type { SessionService } from './sessions/sessions.js';
import type { PlatformMetrics } from './metrics.js';
import type { FileService, OutputService } from './files/files.js';
import type { ObjectStore } from './objects/port.js';
import type { McpProxy } from './mcp/proxy.js';
import type { DeploymentService } from './deployments/index.js';
import type { WorkService } from './work/index.js';
import type { WebhookService } from './webhooks/index.js';
import type { MemoryService } from './memory/index.js';
import type { MemorySearchService } from './memory/search/index.js';
import type { DreamService } from './dreams/index.js';
import type { SkillService } from './skills/skills.js';

/**
 * Everything gateway and workers share: the adapters given by the composition root and the
 * domain services. The interface only: server/src/platform.ts createPlatform builds it.
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
