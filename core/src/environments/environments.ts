import {
  SELF_HOSTED_FORBIDDEN_KEYS,
  type Environment,
  type EnvironmentCreate,
  type EnvironmentUpdate,
} from '@agentfleet/schemas';
import { conflict, invalid, notFound, withErrorCode } from '../errors.js';
import { newId, PREFIX } from '../ids.js';
import type { Collections } from '../store/collections.js';
import type { EnvironmentDoc } from './records.js';
import { pageById, type Page } from '../api/pagination.js';
import { nowIso } from '../util.js';
import { applyMetadataPatch } from '../api/metadata.js';
import { validatePackageLists } from '../sandbox/packages/spec.js';
import { refuseAccountScope } from '../api/unsupported.js';
import { refuseUnservableBaseImage, type BaseImageSupport } from './baseImage.js';
import type { LifecycleWebhooks } from '../webhooks/port.js';

const PKG_KINDS = ['pip', 'npm', 'apt', 'cargo', 'gem', 'go'] as const;
const emptyPackages = () => Object.fromEntries(PKG_KINDS.map((k) => [k, [] as string[]]));

type Body = EnvironmentCreate | EnvironmentUpdate;

/**
 * Environments accept both the spec's top-level fields (base_image, packages, network, env) and
 * the SDK's `config` (cloud: networking + packages; self_hosted). Both views are served.
 */
export class EnvironmentService {
  constructor(
    private readonly c: Collections,
    /** The deployment's sandbox driver: which base_image values can be served (./baseImage.ts). */
    private readonly opts: BaseImageSupport = {},
  ) {}

  /** Lifecycle webhooks environment.* (platform wiring: platform.webhooks). */
  webhooks: LifecycleWebhooks | null = null;

  private apply(doc: Omit<EnvironmentDoc, 'tenant_id'>, b: Body, isCreate: boolean): void {
    // Package names become command arguments in the layer build: refused here, naming the field.
    if (b.config?.type === 'cloud') validatePackageLists(b.config.packages, 'config.packages');
    validatePackageLists(b.packages, 'packages');
    if (b.config) {
      if (!isCreate && b.config.type !== doc.kind)
        throw withErrorCode(
          invalid('config.type', `cannot change from ${doc.kind} to ${b.config.type}`),
          'invalid_config_type_change',
        );
      doc.kind = b.config.type;
      if (b.config.type === 'cloud') {
        const n = b.config.networking;
        if (n?.type === 'limited') {
          // Omitted fields keep their value when the environment is already limited (SDK: omit to preserve).
          const wasLimited = !doc.network.unrestricted;
          doc.network = {
            ...doc.network,
            unrestricted: false,
            allowlist: n.allowed_hosts ?? (wasLimited ? doc.network.allowlist : []),
            allow_mcp_servers:
              n.allow_mcp_servers ?? (wasLimited ? doc.network.allow_mcp_servers : false),
            allow_package_managers:
              n.allow_package_managers ?? (wasLimited ? doc.network.allow_package_managers : false),
          };
        } else if (n?.type === 'unrestricted') {
          doc.network = { ...doc.network, unrestricted: true, allowlist: [] };
        }
        if (b.config.packages)
          for (const k of PKG_KINDS)
            doc.packages[k] = b.config.packages[k] ?? (isCreate ? [] : (doc.packages[k] ?? []));
        // SDK: under limited networking, packages need allow_package_managers (they are fetched
        // from the registries that setting opens; core/src/egress/registries.ts).
        const hasPackages = PKG_KINDS.some((k) => (doc.packages[k] ?? []).length > 0);
        if (!doc.network.unrestricted && hasPackages && !doc.network.allow_package_managers)
          throw invalid(
            'config.networking.allow_package_managers',
            'must be true when packages are specified under limited networking',
          );
      }
    }
    if (b.name != null) doc.name = b.name;
    if (b.description !== undefined) doc.description = b.description;
    refuseAccountScope(b.scope);
    if (b.scope != null) doc.scope = b.scope;
    if (b.base_image !== undefined) {
      refuseUnservableBaseImage(this.opts, b.base_image);
      doc.base_image = b.base_image;
    }
    if (b.packages)
      for (const k of PKG_KINDS) doc.packages[k] = b.packages[k] ?? doc.packages[k] ?? [];
    if (b.network) {
      const allow = b.network.allowlist ?? doc.network.allowlist;
      doc.network = {
        ...doc.network,
        allowlist: allow,
        denylist: b.network.denylist ?? doc.network.denylist,
        // Only an allowlist decides: a denylist-only update never opens a limited environment.
        unrestricted:
          b.network.allowlist !== undefined ? allow.length === 0 : doc.network.unrestricted,
      };
    }
    if (b.env) doc.env = b.env;
    doc.metadata = applyMetadataPatch(doc.metadata, b.metadata);
    if (doc.kind === 'self_hosted') {
      // Runtime settings belong to the runtime host deployment, never to the environment.
      for (const key of Object.keys(doc.metadata)) {
        const bad = SELF_HOSTED_FORBIDDEN_KEYS.find(
          (f) => key === f || key.startsWith(`${f}_`) || key.startsWith(`${f}.`),
        );
        if (bad)
          throw invalid(
            `metadata.${key}`,
            `${bad} settings are not allowed on a self_hosted environment`,
          );
      }
    }
  }

  async create(tenant: string, body: EnvironmentCreate): Promise<Environment> {
    const now = nowIso();
    const doc: Omit<EnvironmentDoc, 'tenant_id'> = {
      _id: newId(PREFIX.environment),
      name: body.name,
      description: null,
      kind: 'cloud',
      base_image: null,
      packages: emptyPackages(),
      network: {
        allowlist: [],
        denylist: [],
        unrestricted: true,
        allow_mcp_servers: false,
        allow_package_managers: false,
      },
      env: {},
      metadata: {},
      scope: 'organization',
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    this.apply(doc, body, true);
    await this.c.environments.insert(tenant, doc);
    await this.webhooks?.emit(tenant, 'environment.created', { id: doc._id });
    return render({ ...doc, tenant_id: tenant });
  }

  async getDoc(tenant: string, id: string): Promise<EnvironmentDoc> {
    const doc = await this.c.environments.get(tenant, id);
    if (!doc) throw notFound('environment', id);
    return doc;
  }

  async get(tenant: string, id: string): Promise<Environment> {
    return render(await this.getDoc(tenant, id));
  }

  async list(
    tenant: string,
    q: { limit?: number; page?: string; cursor?: string; include_archived?: boolean },
  ): Promise<Page<Environment>> {
    const filter: Record<string, unknown> = {};
    if (!q.include_archived) filter.archived_at = null;
    const page = await pageById(this.c.environments, tenant, filter, q);
    return { ...page, data: page.data.map(render) };
  }

  async update(tenant: string, id: string, body: EnvironmentUpdate): Promise<Environment> {
    const doc = await this.getDoc(tenant, id);
    if (doc.archived_at)
      throw withErrorCode(invalid('id', `environment ${id} is archived`), 'environment_archived');
    const { tenant_id: _t, ...rest } = doc;
    const next = structuredClone(rest);
    this.apply(next, body, false);
    next.updated_at = nowIso();
    const { _id, ...set } = next;
    const after = await this.c.environments.findOneAndUpdate(
      tenant,
      { _id: id },
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('environment', id);
    await this.webhooks?.emit(tenant, 'environment.updated', { id });
    return render(after);
  }

  /**
   * Refused (409) while any (non-archived) agent's current version references it, or while a
   * non-terminated, non-deleted session runs on it (test/e2e/environments/environment-lifecycle.test.ts).
   */
  async remove(tenant: string, id: string): Promise<{ id: string; type: 'environment_deleted' }> {
    await this.getDoc(tenant, id);
    const sessions = await this.c.sessions.find(
      tenant,
      { environment_id: id, terminated_at: null, deleted_at: null },
      { limit: 5 },
    );
    if (sessions.length) {
      const ids = sessions.map((s) => s._id);
      throw conflict(
        `environment ${id} is used by session(s) ${ids.join(', ')} that are not terminated; delete or terminate them first`,
        { session_ids: ids },
      );
    }
    const users = await this.c.agents.find(
      tenant,
      { 'spec.environment_id': id, archived_at: null },
      { limit: 5 },
    );
    if (users.length) {
      throw conflict(
        `environment ${id} is referenced by agent(s) ${users.map((a) => a._id).join(', ')}; update or archive them first`,
        { agent_ids: users.map((a) => a._id) },
      );
    }
    if (await this.c.environments.deleteOne(tenant, { _id: id }))
      await this.webhooks?.emit(tenant, 'environment.deleted', { id });
    return { id, type: 'environment_deleted' };
  }

  async archive(tenant: string, id: string): Promise<Environment> {
    await this.getDoc(tenant, id);
    const now = nowIso();
    const r = await this.c.environments.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.webhooks?.emit(tenant, 'environment.archived', { id });
    return this.get(tenant, id);
  }
}

export function render(d: EnvironmentDoc): Environment {
  const packages = {
    pip: [],
    npm: [],
    apt: [],
    cargo: [],
    gem: [],
    go: [],
    ...d.packages,
  } as Environment['packages'];
  const config: Environment['config'] =
    d.kind === 'self_hosted'
      ? { type: 'self_hosted' }
      : {
          type: 'cloud',
          networking: d.network.unrestricted
            ? { type: 'unrestricted' }
            : {
                type: 'limited',
                allowed_hosts: d.network.allowlist,
                allow_mcp_servers: d.network.allow_mcp_servers,
                allow_package_managers: d.network.allow_package_managers,
              },
          packages: { type: 'packages', ...packages },
        };
  return {
    id: d._id,
    type: 'environment',
    name: d.name,
    description: d.description,
    config,
    base_image: d.base_image,
    packages,
    network: { allowlist: d.network.allowlist, denylist: d.network.denylist },
    env: d.env,
    metadata: d.metadata,
    scope: d.scope,
    archived_at: d.archived_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}
