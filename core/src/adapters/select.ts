import { join } from 'node:path';
import type { Config } from '../config.js';
import type { CommandBus } from '../ports/bus.js';
import type { Coordination } from '../ports/coordination.js';
import type { ObjectStore } from '../ports/objectStore.js';
import type { DocumentStore } from '../ports/store.js';
import type { StoreRouter } from '../domain/collections.js';
import { singleStore } from '../domain/collections.js';
import { EmbeddedBus } from './embedded/bus.js';
import { embeddedCoordination } from './embedded/coordination.js';
import { openEmbeddedStore } from './embedded/documentStore.js';
import { createDirectoryObjectStore } from './embedded/objectStore.js';
import type { MongoStore } from './mongo/documentStore.js';

export interface Adapters {
  store: DocumentStore;
  router: StoreRouter;
  bus: CommandBus;
  coordination: Coordination;
  /** Snapshots, outputs, files: GridFS beside each tenant's documents (OBJECT_STORE=gridfs), else a directory. */
  objects: ObjectStore;
  close(): Promise<void>;
}

/** The database name: the URL's path when it has one, else the fleet namespace. */
export function databaseOf(url: string, namespace: string): string {
  const path = new URL(url.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.replace(/^\//, '');
  return path || namespace;
}

const safeTenant = (t: string) => t.replace(/[^A-Za-z0-9_]/g, '_');

/**
 * MongoDB routing: one connection per backend URL; a tenant lives on its STORE_BACKENDS
 * backend (default otherwise) and, with PER_TENANT_DB_ENABLED, in its own database
 * `<db>_<tenant>` there. The control database (tenants, API keys) is the default backend's.
 */
async function mongoRouter(
  config: Config,
): Promise<{ router: StoreRouter; control: DocumentStore; close(): Promise<void> }> {
  const { openMongoStore } = await import('./mongo/documentStore.js');
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

/** Chooses every port's adapter from the config: a real one where its URL is set, else embedded. */
export async function selectAdapters(config: Config): Promise<Adapters> {
  const closers: Array<() => Promise<void>> = [];
  let store: DocumentStore;
  let router: StoreRouter;
  let objects: ObjectStore;
  if (config.infra.mongodbUrl || config.fleet.storeBackends?.default) {
    const m = await mongoRouter(config);
    store = m.control;
    router = m.router;
    closers.push(() => m.close());
    if (config.objectStore === 'gridfs') {
      // each tenant's objects in the database of its documents (keys are <kind>/<tenant>/...)
      const { createGridFsObjectStore } = await import('./mongo/objectStore.js');
      const { tenantRoutedObjectStore } = await import('./mongo/tenantObjects.js');
      const perDatabase = new WeakMap<DocumentStore, ObjectStore>();
      const gridFsOf = (s: DocumentStore) => {
        let o = perDatabase.get(s);
        if (!o) {
          const ms = s as MongoStore;
          perDatabase.set(
            s,
            (o = createGridFsObjectStore({
              db: ms.connection.getClient().db(ms.dbName),
              bucketName: 'objects',
            })),
          );
        }
        return o;
      };
      objects = tenantRoutedObjectStore({
        control: gridFsOf(m.control),
        forTenant: async (tenant) => gridFsOf(await m.router.forTenant(tenant)),
        all: async () => (await m.router.all()).map(gridFsOf),
      });
    } else objects = createDirectoryObjectStore(config.objectStoreDir);
  } else {
    objects = createDirectoryObjectStore(config.objectStoreDir);
    store = await openEmbeddedStore({ dir: join(config.dataDir, 'store') });
    router = singleStore(store);
    closers.push(() => store.close());
  }
  let bus: CommandBus;
  if (config.infra.kafkaBrokers) {
    const { createKafkaBus } = await import('./kafka/bus.js');
    bus = await createKafkaBus({
      brokers: config.infra.kafkaBrokers.split(',').map((b) => b.trim()),
      clientId: `${config.fleet.namespace}-${config.role}-${process.pid}`,
      namespace: config.fleet.namespace,
      partitions: config.fleet.kafkaPartitions,
      replicationFactor: config.fleet.kafkaReplicationFactor,
      // Commands published before the first worker of a group started are still delivered.
      initialOffset: 'earliest',
      logLevel: 'error',
      consumer: {
        sessionTimeout: config.fleet.kafkaSessionTimeoutMs,
        heartbeatInterval: config.fleet.kafkaHeartbeatIntervalMs,
      },
    });
  } else bus = new EmbeddedBus();
  closers.unshift(() => bus.close());
  let coordination: Coordination;
  if (config.infra.redisUrl) {
    const { createRedisCoordination } = await import('./redis/coordination.js');
    coordination = await createRedisCoordination(config.infra.redisUrl, {
      keyPrefix: `${config.fleet.namespace}:`,
    });
  } else coordination = embeddedCoordination();
  closers.splice(1, 0, () => coordination.close());
  return {
    store,
    router,
    bus,
    coordination,
    objects,
    async close() {
      for (const c of closers) await c();
    },
  };
}
