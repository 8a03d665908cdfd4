/**
 * MongoDB routing, the document-store and object-store adapters of fleet mode: one connection
 * per backend URL; a tenant lives on its STORE_BACKENDS backend (default otherwise) and, with
 * PER_TENANT_DB_ENABLED, in its own database `<db>_<tenant>` there. The control database
 * (tenants, API keys) is the default backend's. GridFS objects live beside each tenant's
 * documents (core/src/adapters.ts openGridFsObjects). The driver is loaded only when a router is
 * opened. Chosen by the composition root
 * (server/src/components.ts); proven by test/store-backends.test.ts and the object-store suite.
 */
import type { Config } from '../../config/config.js';
import type { StoreRouter } from '../collections.js';
import type { DocumentStore } from '../port.js';

export interface MongoRouter {
  router: StoreRouter;
  control: DocumentStore;
  close(): Promise<void>;
}

/** The database name: the URL's path when it has one, else the fleet namespace. */
export function databaseOf(url: string, namespace: string): string {
  const path = new URL(url.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.replace(/^\//, '');
  return path || namespace;
}

const safeTenant = (t: string) => t.replace(/[^A-Za-z0-9_]/g, '_');

export async function openMongoRouter(
  config: Pick<Config, 'infra' | 'fleet'>,
): Promise<MongoRouter> {
  const { openMongoStore } = await import('./documentStore.js');
  const sb = config.fleet.storeBackends;
  const defaultUrl = sb?.default ?? config.infra.mongodbUrl!;
  const opened = new Map<string, Promise<DocumentStore>>();
  const open = (url: string) => {
    let s = opened.get(url);
    if (!s)
      opened.set(
        url,
        (s = openMongoStore({ url, dbName: databaseOf(url, config.fleet.namespace) })),
      );
    return s;
  };
  const control = await open(defaultUrl);
  const perTenant = new Map<string, Promise<DocumentStore>>();
  const backendOf = (tenant: string) =>
    sb?.tenants[tenant] ? sb.backends[sb.tenants[tenant]!]! : defaultUrl;
  const forTenant = (tenant: string): Promise<DocumentStore> => {
    const url = backendOf(tenant);
    if (!config.fleet.perTenantDb) return open(url);
    let s = perTenant.get(tenant);
    if (!s) {
      s = open(url).then((base) =>
        (base as DocumentStore & { forDatabase(name: string): DocumentStore }).forDatabase(
          `${databaseOf(url, config.fleet.namespace)}_${safeTenant(tenant)}`,
        ),
      );
      perTenant.set(tenant, s);
    }
    return s;
  };
  const router: StoreRouter = {
    control,
    forTenant,
    async all() {
      if (!config.fleet.perTenantDb) {
        const urls = new Set([defaultUrl, ...Object.values(sb?.backends ?? {})]);
        return Promise.all([...urls].map(open));
      }
      const tenants = await control.collection<{ _id: string }>({ name: 'tenants' }).find({});
      return Promise.all(tenants.map((t) => forTenant(t._id)));
    },
  };
  return {
    router,
    control,
    async close() {
      for (const s of opened.values()) await (await s).close();
    },
  };
}
