import type { LedgerBucketDoc, PriceCardDoc } from '../cost/records.js';
import type {
  Collection,
  CollectionSpec,
  Doc,
  DocumentStore,
  Filter,
  SortSpec,
  FindOptions,
  Update,
} from './port.js';
import type { AgentSpec, ModelConfig } from '@agentfleet/schemas';
import type { DeploymentDoc, DeploymentRunDoc } from '../deployments/records.js';
import type { WorkDoc } from '../work/records.js';
import type {
  WebhookDeliveryDoc,
  WebhookEndpointDoc,
  WebhookEventDoc,
} from '../webhooks/records.js';
import type { PinnedSkill } from '../skills/records.js';
import type { MemoryDoc, MemoryStoreDoc, MemoryVersionDoc } from '../memory/records.js';
import type { DreamDoc } from '../dreams/records.js';
import type { EvalCaseDoc, EvalRunDoc } from '../evals/records.js';
import type { SkillDoc, SkillVersionDoc } from '../skills/records.js';
import type { TenantDoc, ApiKeyDoc } from '../auth/records.js';
import type { AgentDoc, AgentVersionDoc } from '../agents/records.js';
import type { EnvironmentDoc } from '../environments/records.js';
import type {
  SessionAgentSnapshot,
  SessionEnvironmentSnapshot,
  SessionDoc,
  RunDoc,
} from '../sessions/records.js';
import type { EventDoc } from '../events/records.js';
import type { ModelCardDoc } from '../models/records.js';
import type { FileDoc } from '../files/records.js';
import type { VaultDoc, VaultCredentialDoc } from '../vaults/records.js';
import type { WorkPollerDoc } from '../work/records.js';
import type {
  AllowedDomainDoc,
  ConsoleSessionDoc,
  ConsoleUserDoc,
  InvitationDoc,
  MembershipDoc,
  SessionErrorDoc,
  UsedSignInDoc,
} from '../console/records.js';
import type {
  InstallDoc,
  InstallRouteDoc,
  InstallStateDoc,
  PublicationDoc,
  SeenDeliveryDoc,
  ThreadDoc,
} from '../integrations/records.js';

/**
 * Where a tenant's documents live. One store for everything (embedded, or MongoDB without
 * isolation), a shard per tenant (STORE_BACKENDS), or a database per tenant
 * (PER_TENANT_DB_ENABLED). The control store holds tenants and API keys.
 */
export interface StoreRouter {
  readonly control: DocumentStore;
  forTenant(tenant: string): Promise<DocumentStore>;
  /** Every store that may hold tenant documents, for cross-tenant sweeps. */
  all(): Promise<DocumentStore[]>;
}

export function singleStore(store: DocumentStore): StoreRouter {
  return { control: store, forTenant: async () => store, all: async () => [store] };
}

/**
 * Tenant-scoped access: every method takes the tenant id first and adds it to every filter and
 * every inserted document, so no query can run unscoped. The only cross-tenant read is
 * `scanAll`, for worker sweeps.
 */
export class TenantCollection<T extends Doc & { tenant_id: string }> {
  private readonly handles = new Map<DocumentStore, Collection<T>>();
  constructor(
    private readonly spec: CollectionSpec,
    private readonly router: StoreRouter,
  ) {}

  private on(store: DocumentStore): Collection<T> {
    let c = this.handles.get(store);
    if (!c) this.handles.set(store, (c = store.collection<T>(this.spec)));
    return c;
  }
  private async c(tenant: string): Promise<Collection<T>> {
    return this.on(await this.router.forTenant(tenant));
  }
  /**
   * The tenant's store and this collection on it, for `DocumentStore.transaction` (the caller
   * adds `tenant_id` to its filters and documents itself there).
   */
  async handle(tenant: string): Promise<{ store: DocumentStore; collection: Collection<T> }> {
    const store = await this.router.forTenant(tenant);
    return { store, collection: this.on(store) };
  }
  async insert(tenant: string, doc: Omit<T, 'tenant_id'>): Promise<void> {
    return (await this.c(tenant)).insertOne({ ...(doc as T), tenant_id: tenant });
  }
  async insertMany(tenant: string, docs: Array<Omit<T, 'tenant_id'>>): Promise<void> {
    return (await this.c(tenant)).insertMany(docs.map((d) => ({ ...(d as T), tenant_id: tenant })));
  }
  async get(tenant: string, id: string): Promise<T | null> {
    return (await this.c(tenant)).findOne({ _id: id, tenant_id: tenant });
  }
  async findOne(tenant: string, filter: Filter, options?: FindOptions): Promise<T | null> {
    return (await this.c(tenant)).findOne({ ...filter, tenant_id: tenant }, options);
  }
  async find(tenant: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return (await this.c(tenant)).find({ ...filter, tenant_id: tenant }, options);
  }
  async count(tenant: string, filter: Filter): Promise<number> {
    return (await this.c(tenant)).count({ ...filter, tenant_id: tenant });
  }
  async updateOne(tenant: string, filter: Filter, update: Update, options?: { upsert?: boolean }) {
    return (await this.c(tenant)).updateOne({ ...filter, tenant_id: tenant }, update, options);
  }
  async findOneAndUpdate(
    tenant: string,
    filter: Filter,
    update: Update,
    options?: { returnDocument?: 'before' | 'after'; upsert?: boolean; sort?: SortSpec },
  ) {
    return (await this.c(tenant)).findOneAndUpdate(
      { ...filter, tenant_id: tenant },
      update,
      options,
    );
  }
  async deleteOne(tenant: string, filter: Filter) {
    return (await this.c(tenant)).deleteOne({ ...filter, tenant_id: tenant });
  }
  async deleteMany(tenant: string, filter: Filter) {
    return (await this.c(tenant)).deleteMany({ ...filter, tenant_id: tenant });
  }
  /** Cross-tenant read for worker sweeps only: fans out over every store. */
  async scanAll(filter: Filter, options?: FindOptions): Promise<T[]> {
    const out: T[] = [];
    for (const store of await this.router.all())
      out.push(...(await this.on(store).find(filter, options)));
    return out;
  }
}

export const COLLECTIONS = {
  tenants: { name: 'tenants' },
  apiKeys: {
    name: 'api_keys',
    indexes: [{ fields: { hash: 1 }, unique: true }, { fields: { tenant_id: 1, _id: 1 } }],
  },
  agents: { name: 'agents', indexes: [{ fields: { tenant_id: 1, _id: 1 } }] },
  agentVersions: {
    name: 'agent_versions',
    indexes: [{ fields: { agent_id: 1, version: 1 }, unique: true }],
  },
  environments: { name: 'environments', indexes: [{ fields: { tenant_id: 1, _id: 1 } }] },
  sessions: {
    name: 'sessions',
    indexes: [
      { fields: { tenant_id: 1, _id: 1 } },
      { fields: { agent_id: 1 } },
      { fields: { pending: 1 } },
      { fields: { thread_of: 1 } },
    ],
  },
  events: { name: 'events', indexes: [{ fields: { session_id: 1, seq: 1 }, unique: true }] },
  runs: { name: 'runs', indexes: [{ fields: { tenant_id: 1 } }] },
  modelCards: {
    name: 'model_cards',
    indexes: [{ fields: { tenant_id: 1, model_id: 1 }, unique: true }],
  },
  files: {
    name: 'files',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { tenant_id: 1, scope_id: 1 } }],
  },
  vaults: { name: 'vaults', indexes: [{ fields: { tenant_id: 1, _id: 1 } }] },
  vaultCredentials: {
    name: 'vault_credentials',
    indexes: [{ fields: { tenant_id: 1, vault_id: 1, _id: 1 } }],
  },
  deployments: {
    name: 'deployments',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { archived_at: 1 } }],
  },
  deploymentRuns: {
    name: 'deployment_runs',
    indexes: [{ fields: { tenant_id: 1, deployment_id: 1, _id: 1 } }, { fields: { state: 1 } }],
  },
  webhookEndpoints: {
    name: 'webhook_endpoints',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }],
  },
  webhookEvents: { name: 'webhook_events', indexes: [{ fields: { tenant_id: 1, _id: 1 } }] },
  webhookDeliveries: {
    name: 'webhook_deliveries',
    indexes: [
      { fields: { tenant_id: 1, endpoint_id: 1, _id: 1 } },
      { fields: { state: 1, next_attempt_at: 1 } },
    ],
  },
  /** Work items of self-hosted environments (core/src/work); `open` keeps one open item per session. */
  work: {
    name: 'work_items',
    indexes: [
      { fields: { tenant_id: 1, environment_id: 1, state: 1, _id: 1 } },
      { fields: { open: 1 }, unique: true },
    ],
  },
  workPollers: { name: 'work_pollers', indexes: [{ fields: { tenant_id: 1, environment_id: 1 } }] },
  /** Memory stores (core/src/memory). */
  memoryStores: {
    name: 'memory_stores',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { tenant_id: 1, agent_id: 1 } }],
  },
  /** Live memories only (a delete removes the document): a path is unique in its store. */
  memories: {
    name: 'memories',
    indexes: [
      { fields: { tenant_id: 1, store_id: 1, path: 1 }, unique: true },
      { fields: { tenant_id: 1, store_id: 1, updated_at: 1 } },
    ],
  },
  /** Every write's version; the retention sweep scans `created_ms`. */
  memoryVersions: {
    name: 'memory_versions',
    indexes: [
      { fields: { tenant_id: 1, store_id: 1, _id: 1 } },
      { fields: { tenant_id: 1, store_id: 1, memory_id: 1, _id: 1 } },
      { fields: { created_ms: 1 } },
    ],
  },
  /** Dreams (core/src/dreams); the worker scan reads live, unclaimed ones. */
  dreams: {
    name: 'dreams',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { status: 1, claimed_until: 1 } }],
  },
  /** Custom skills (core/src/skills); a name is unique per tenant (it is the mount folder). */
  skills: {
    name: 'skills',
    indexes: [
      { fields: { tenant_id: 1, _id: 1 } },
      { fields: { tenant_id: 1, name: 1 }, unique: true },
    ],
  },
  /** Console sign-ins (core/src/console), in the control store: a cookie names no tenant. */
  consoleSessions: {
    name: 'console_sessions',
    indexes: [{ fields: { user_id: 1 } }, { fields: { tenant_id: 1, key_id: 1 } }],
  },
  /** Console users and their tenant memberships, invitations and allowed domains (control store). */
  consoleUsers: {
    name: 'console_users',
    indexes: [{ fields: { identity_key: 1 }, unique: true }],
  },
  memberships: {
    name: 'console_memberships',
    indexes: [{ fields: { user_id: 1 } }, { fields: { tenant_id: 1, _id: 1 } }],
  },
  invitations: {
    name: 'console_invitations',
    indexes: [{ fields: { email: 1 } }, { fields: { tenant_id: 1, _id: 1 } }],
  },
  allowedDomains: {
    name: 'console_allowed_domains',
    indexes: [{ fields: { domain: 1 } }, { fields: { tenant_id: 1 } }],
  },
  usedSignIns: { name: 'console_used_sign_ins', indexes: [{ fields: { expires_at: 1 } }] },
  /** The console dashboard's recent session errors (core/src/console/dashboard.ts). */
  sessionErrors: {
    name: 'session_errors',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { tenant_id: 1, created_ms: 1 } }],
  },
  /** Integrations (core/src/integrations): installs, publications, threads per tenant. */
  integrationInstalls: {
    name: 'integration_installs',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { tenant_id: 1, integration: 1 } }],
  },
  integrationPublications: {
    name: 'integration_publications',
    indexes: [{ fields: { tenant_id: 1, integration: 1, _id: 1 } }],
  },
  integrationThreads: {
    name: 'integration_threads',
    indexes: [
      { fields: { tenant_id: 1, session_id: 1 } },
      { fields: { tenant_id: 1, install_id: 1 } },
    ],
  },
  /** Control store: pending OAuth states, account → tenant routes, delivery ids seen. */
  integrationStates: { name: 'integration_states', indexes: [{ fields: { expires_at: 1 } }] },
  integrationRoutes: { name: 'integration_routes', indexes: [{ fields: { tenant_id: 1 } }] },
  integrationDeliveries: {
    name: 'integration_deliveries',
    indexes: [{ fields: { expires_at: 1 } }],
  },
  /** Control store: the runtime ledger's hourly buckets and the price card (core/src/cost). */
  costLedger: {
    name: 'cost_ledger',
    indexes: [
      { fields: { hour_ms: 1 } },
      { fields: { tenant_id: 1, hour_ms: 1 } },
      { fields: { provider: 1 } },
    ],
  },
  priceCards: { name: 'price_cards' },
  /** Eval runs and their cases (core/src/evals); the worker scan reads active cases. */
  evalRuns: {
    name: 'eval_runs',
    indexes: [{ fields: { tenant_id: 1, _id: 1 } }, { fields: { status: 1 } }],
  },
  evalCases: {
    name: 'eval_cases',
    indexes: [
      { fields: { tenant_id: 1, eval_id: 1, index: 1 } },
      { fields: { tenant_id: 1, session_id: 1 } },
      { fields: { tenant_id: 1, status: 1 } },
      { fields: { status: 1, updated_at: 1 } },
    ],
  },
  /** Published skill versions; `_id` is `<skill_id>/<version>`. */
  skillVersions: {
    name: 'skill_versions',
    indexes: [{ fields: { tenant_id: 1, skill_id: 1, _id: 1 } }],
  },
} as const satisfies Record<string, CollectionSpec>;

export function openCollections(router: StoreRouter) {
  const t = <T extends Doc & { tenant_id: string }>(spec: CollectionSpec) =>
    new TenantCollection<T>(spec, router);
  return {
    tenants: router.control.collection<TenantDoc>(COLLECTIONS.tenants),
    apiKeys: router.control.collection<ApiKeyDoc>(COLLECTIONS.apiKeys),
    consoleSessions: router.control.collection<ConsoleSessionDoc>(COLLECTIONS.consoleSessions),
    consoleUsers: router.control.collection<ConsoleUserDoc>(COLLECTIONS.consoleUsers),
    memberships: router.control.collection<MembershipDoc>(COLLECTIONS.memberships),
    invitations: router.control.collection<InvitationDoc>(COLLECTIONS.invitations),
    allowedDomains: router.control.collection<AllowedDomainDoc>(COLLECTIONS.allowedDomains),
    usedSignIns: router.control.collection<UsedSignInDoc>(COLLECTIONS.usedSignIns),
    integrationStates: router.control.collection<InstallStateDoc>(COLLECTIONS.integrationStates),
    integrationRoutes: router.control.collection<InstallRouteDoc>(COLLECTIONS.integrationRoutes),
    integrationDeliveries: router.control.collection<SeenDeliveryDoc>(
      COLLECTIONS.integrationDeliveries,
    ),
    costLedger: router.control.collection<LedgerBucketDoc>(COLLECTIONS.costLedger),
    priceCards: router.control.collection<PriceCardDoc>(COLLECTIONS.priceCards),
    integrationInstalls: t<InstallDoc>(COLLECTIONS.integrationInstalls),
    integrationPublications: t<PublicationDoc>(COLLECTIONS.integrationPublications),
    integrationThreads: t<ThreadDoc>(COLLECTIONS.integrationThreads),
    sessionErrors: t<SessionErrorDoc>(COLLECTIONS.sessionErrors),
    agents: t<AgentDoc>(COLLECTIONS.agents),
    agentVersions: t<AgentVersionDoc>(COLLECTIONS.agentVersions),
    environments: t<EnvironmentDoc>(COLLECTIONS.environments),
    sessions: t<SessionDoc>(COLLECTIONS.sessions),
    events: t<EventDoc>(COLLECTIONS.events),
    runs: t<RunDoc>(COLLECTIONS.runs),
    modelCards: t<ModelCardDoc>(COLLECTIONS.modelCards),
    files: t<FileDoc>(COLLECTIONS.files),
    vaults: t<VaultDoc>(COLLECTIONS.vaults),
    vaultCredentials: t<VaultCredentialDoc>(COLLECTIONS.vaultCredentials),
    deployments: t<DeploymentDoc>(COLLECTIONS.deployments),
    work: t<WorkDoc>(COLLECTIONS.work),
    workPollers: t<WorkPollerDoc>(COLLECTIONS.workPollers),
    deploymentRuns: t<DeploymentRunDoc>(COLLECTIONS.deploymentRuns),
    webhookEndpoints: t<WebhookEndpointDoc>(COLLECTIONS.webhookEndpoints),
    webhookEvents: t<WebhookEventDoc>(COLLECTIONS.webhookEvents),
    webhookDeliveries: t<WebhookDeliveryDoc>(COLLECTIONS.webhookDeliveries),
    memoryStores: t<MemoryStoreDoc>(COLLECTIONS.memoryStores),
    memories: t<MemoryDoc>(COLLECTIONS.memories),
    memoryVersions: t<MemoryVersionDoc>(COLLECTIONS.memoryVersions),
    skills: t<SkillDoc>(COLLECTIONS.skills),
    skillVersions: t<SkillVersionDoc>(COLLECTIONS.skillVersions),
    dreams: t<DreamDoc>(COLLECTIONS.dreams),
    evalRuns: t<EvalRunDoc>(COLLECTIONS.evalRuns),
    evalCases: t<EvalCaseDoc>(COLLECTIONS.evalCases),
  };
}
export type Collections = ReturnType<typeof openCollections>;
export type { ModelConfig };
