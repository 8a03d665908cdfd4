/**
 * `@agentfleet/core/adapters`: every adapter of core's ports, for the composition root
 * (server/src) and tests only; `@agentfleet/core` exports services, types and ports, never an
 * adapter (test/repo-shape.test.ts checks both, and that no other core/src file imports an
 * adapter of another feature).
 * - Document store: embedded (SQLite in the data dir) and MongoDB (with its per-tenant router).
 * - Command bus: in-process and Kafka; coordination: in-process and Redis.
 * - Object store: a directory and GridFS.
 * - Sandbox drivers: bubblewrap on this machine (with its host checks) and Nomad; the package
 *   layer service, whose builds run in bubblewrap sandboxes of their own.
 * - Model providers: the Anthropic Messages and OpenAI Chat adapters, and createProvider, the
 *   ProviderFactory (models/port.ts) the assembly hands to ModelResolver and memory search.
 * Kafka and Redis load their client library only when opened (openKafkaBus,
 * openRedisCoordination), so a process on embedded adapters never loads kafkajs or ioredis.
 * Contract suites: core/test/bus.test.ts, core/test/coordination*.test.ts,
 * core/test/store*.test.ts, core/test/objectStore.test.ts, core/test/sandbox.*.test.ts,
 * core/test/modelProvider.test.ts.
 */
import type { KafkaBus, KafkaBusOptions } from './bus/kafka/options.js';
import type { Coordination } from './coordination/port.js';
import type { DocumentStore } from './store/port.js';
import type { ObjectStore } from './objects/port.js';
import type { MongoStore } from './store/mongo/documentStore.js';
import type { MongoRouter } from './store/mongo/router.js';

export { EmbeddedBus } from './bus/embedded.js';
export type { KafkaBus, KafkaBusOptions } from './bus/kafka/options.js';
export {
  embeddedCoordination,
  MemoryLeaseStore,
  MemoryPubSub,
  MemoryRateLimiter,
} from './coordination/embedded.js';
export {
  openEmbeddedStore,
  type EmbeddedStore,
  type EmbeddedStoreOptions,
} from './store/embedded/documentStore.js';
export { openMongoRouter, databaseOf, type MongoRouter } from './store/mongo/router.js';
export { createDirectoryObjectStore } from './objects/directory.js';
export {
  createLocalDriver,
  checkBubblewrap,
  BWRAP_MISSING_MESSAGE,
  type LocalLimitsOptions,
} from './sandbox/drivers/bubblewrap/driver.js';
export {
  describeMissing,
  noLimitsMessage,
  probeSandboxLimits,
} from './sandbox/drivers/bubblewrap/limits.js';
export { createNomadDriver } from './sandbox/drivers/nomad/driver.js';
export { nomadAgentCommand, nomadDockerMounts } from './sandbox/drivers/nomad/command.js';
export { checkHostUser, sandboxProgram } from '@agentfleet/sandbox-agent';
export { createPackageLayerService } from './sandbox/packages/wiring.js';
export {
  AnthropicMessagesProvider,
  OpenAIChatProvider,
  createProvider,
} from './models/providers.js';

/** The Kafka command bus; kafkajs is loaded by this call. */
export async function openKafkaBus(opts: KafkaBusOptions): Promise<KafkaBus> {
  const { createKafkaBus } = await import('./bus/kafka/bus.js');
  return createKafkaBus(opts);
}

/** Coordination on Redis; ioredis is loaded by this call. */
export async function openRedisCoordination(
  url: string,
  opts: { keyPrefix: string },
): Promise<Coordination> {
  const { createRedisCoordination } = await import('./coordination/redis.js');
  return createRedisCoordination(url, opts);
}

/**
 * GridFS object store routed like the documents: each tenant's objects in its database, on the
 * router's connections (test/e2e/fleet/objects-shared.test.ts; the GridFS store itself: the
 * object-store contract in core/test/objectStore.test.ts).
 */
export async function openGridFsObjects(m: MongoRouter): Promise<ObjectStore> {
  const { createGridFsObjectStore } = await import('./objects/gridfs/objectStore.js');
  const { tenantRoutedObjectStore } = await import('./objects/gridfs/tenantObjects.js');
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
  return tenantRoutedObjectStore({
    control: gridFsOf(m.control),
    forTenant: async (tenant) => gridFsOf(await m.router.forTenant(tenant)),
    all: async () => (await m.router.all()).map(gridFsOf),
  });
}
