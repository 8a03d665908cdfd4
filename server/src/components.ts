/**
 * Component selection of the agentfleet server: defaults with overrides. Every port's default
 * is an ordinary exported constructor from @agentfleet/core/adapters, chosen from the typed
 * config: a real adapter where its URL is set (MONGODB_URL or STORE_BACKENDS, KAFKA_BROKERS,
 * REDIS_URL, OBJECT_STORE=gridfs), else the embedded one. An override replaces the default of its port
 * (`startServer(role, env, overrides)`); an overridden component is closed by whoever made it
 * (test/e2e/server/components.test.ts).
 * Proven by the tests that run on the real adapters (test/e2e/fleet/fleet.test.ts,
 * test/e2e/fleet/tenant-placement.test.ts, test/e2e/fleet/objects-shared.test.ts) and every harness-based test.
 */
import { join } from 'node:path';
import {
  createLogger,
  singleStore,
  type CommandBus,
  type Config,
  type Coordination,
  type DocumentStore,
  type ObjectStore,
  type StoreRouter,
} from '@agentfleet/core';
import {
  createDirectoryObjectStore,
  embeddedCoordination,
  EmbeddedBus,
  openEmbeddedStore,
  openGridFsObjects,
  openKafkaBus,
  openMongoRouter,
  openRedisCoordination,
} from '@agentfleet/core/adapters';
import type { Adapters } from './platform.js';

/** Components given by the caller instead of the config's defaults. */
export interface ComponentOverrides {
  /** Document store (with its router) replacing MongoDB/embedded. */
  store?: { store: DocumentStore; router: StoreRouter };
  bus?: CommandBus;
  coordination?: Coordination;
  objects?: ObjectStore;
}

/** The bus the config names: Kafka when KAFKA_BROKERS is set, else in-process. */
export async function defaultBus(config: Config): Promise<CommandBus> {
  if (!config.infra.kafkaBrokers) return new EmbeddedBus();
  return openKafkaBus({
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
}

/** Coordination the config names: Redis when REDIS_URL is set, else in-process. */
export async function defaultCoordination(config: Config): Promise<Coordination> {
  if (!config.infra.redisUrl) return embeddedCoordination();
  return openRedisCoordination(config.infra.redisUrl, { keyPrefix: `${config.fleet.namespace}:` });
}

/** Chooses every port's component: the override where given, else the config's default. */
export async function selectComponents(
  config: Config,
  overrides: ComponentOverrides = {},
): Promise<Adapters> {
  const closers: Array<() => Promise<void>> = [];
  let store: DocumentStore;
  let router: StoreRouter;
  let objects: ObjectStore | undefined = overrides.objects;
  // The embedded store opened here holds its data dir's lock: this process is its only writer.
  let exclusiveStore = false;
  try {
    if (overrides.store) ({ store, router } = overrides.store);
    else if (config.infra.mongodbUrl || config.fleet.storeBackends?.default) {
      const m = await openMongoRouter(config);
      store = m.control;
      router = m.router;
      closers.push(() => m.close());
      if (!objects && config.objectStore === 'gridfs') objects = await openGridFsObjects(m);
    } else {
      store = await openEmbeddedStore({
        dir: join(config.dataDir, 'store'),
        sync: config.storeSync,
        logger: createLogger(config.logLevel),
      });
      router = singleStore(store);
      exclusiveStore = true;
      closers.push(() => store.close());
    }
    objects ??= createDirectoryObjectStore(config.objectStoreDir);
    const bus = overrides.bus ?? (await defaultBus(config));
    if (!overrides.bus) closers.unshift(() => bus.close());
    const coordination = overrides.coordination ?? (await defaultCoordination(config));
    if (!overrides.coordination)
      closers.splice(overrides.bus ? 0 : 1, 0, () => coordination.close());
    const close = async () => {
      for (const c of closers) await c();
    };
    return { store, router, bus, coordination, objects, exclusiveStore, close };
  } catch (err) {
    for (const c of closers) await c().catch(() => {});
    throw err;
  }
}
