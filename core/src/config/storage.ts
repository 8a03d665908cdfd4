/**
 * Configuration sections of where data lives: the object store, file and output quotas, the
 * embedded store's durability, and fleet mode's real adapters (Kafka, MongoDB, Redis) with
 * their rules: a role other than `all` needs all three, and any of them needs API_KEY and
 * PLATFORM_ROOT_SECRET (every process must agree on them). Schemas only; core/src/config/schema.ts
 * reads them. Proved by core/test/objectStore.test.ts ('object store selection') and
 * test/e2e/server/startup.test.ts.
 */
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { parseStoreBackends, StoreBackendsSchema, type StoreBackends } from './storeBackends.js';
import {
  bool,
  custom,
  int,
  lowerThan,
  notLargerThan,
  nullable,
  oneOf,
  path,
  section,
  str,
  withoutCredentials,
  type ReadContext,
} from './schema.js';

const backendsOf = (ctx: ReadContext) => ctx.get('STORE_BACKENDS') as StoreBackends | null;
const hasMongo = (ctx: ReadContext) => !!(ctx.get('MONGODB_URL') || backendsOf(ctx)?.default);

export const FilesSection = section({
  objectStore: oneOf('OBJECT_STORE', ['dir', 'gridfs'], {
    defaultFrom: (ctx) => (hasMongo(ctx) ? 'gridfs' : 'dir'),
    docDefault: '`gridfs` when `MONGODB_URL` (or `STORE_BACKENDS`) is set, else `dir`',
    check: (v, ctx) =>
      v === 'gridfs' && !hasMongo(ctx) && 'OBJECT_STORE=gridfs needs MongoDB (MONGODB_URL)',
    description:
      "where snapshots, outputs and uploaded files live: `gridfs` on the fleet's MongoDB, in each tenant's database (shared by every machine), or `dir` (`OBJECT_STORE_DIR`)",
  }),
  objectStoreDir: path('OBJECT_STORE_DIR', {
    defaultFrom: (ctx) => join(ctx.get('DATA_DIR') as string, 'objects'),
    docDefault: '`DATA_DIR/objects`',
    description: 'the directory store (`OBJECT_STORE=dir`), shared by the processes of one machine',
  }),
  storeSync: oneOf('STORE_SYNC', ['normal', 'full'], {
    default: 'normal',
    description:
      'embedded store durability: `normal` = a committed write survives `kill -9` of the process (a power loss may roll back the last commits, never corrupts); `full` = the WAL is fsynced on every commit (survives power loss, one fsync per group commit)',
  }),
  maxFileBytes: int('MAX_FILE_BYTES', {
    default: 32 * 1024 * 1024,
    min: 1,
    max: 1024 * 1024 * 1024,
    docDefault: '32 MiB',
    description:
      'upload limit of `POST /v1/files` (streamed; over it: 400 naming `file`, nothing stored)',
  }),
  outputs: section({
    maxFileBytes: int('OUTPUT_MAX_FILE_BYTES', {
      default: 100 * 1024 * 1024,
      min: 1,
      max: 64 * 1024 ** 3,
      docDefault: '100 MiB',
      check: notLargerThan('OUTPUT_MAX_SESSION_BYTES'),
      description:
        'largest session output stored; larger files are skipped with a `session.warning` (the sandbox agent does not even send them)',
    }),
    maxSessionBytes: int('OUTPUT_MAX_SESSION_BYTES', {
      default: 1024 ** 3,
      min: 1,
      max: 1024 ** 4,
      docDefault: '1 GiB',
      description:
        'all stored outputs of a session together; a file that would go over is skipped with a `session.warning`; must be ≥ `OUTPUT_MAX_FILE_BYTES`',
    }),
  }),
});

export const FleetSection = section(
  {
    infra: section({
      kafkaBrokers: nullable(
        str('KAFKA_BROKERS', {
          pattern: /^\s*[^:,\s]+:\d+\s*(?:,\s*[^:,\s]+:\d+\s*)*$/,
          problem: 'KAFKA_BROKERS must be a comma-separated list of host:port',
          docDefault: 'unset (in-process bus)',
          description: '`host:port,…`: commands go through Kafka (kafkajs)',
        }),
      ),
      mongodbUrl: nullable(
        str('MONGODB_URL', {
          pattern: /^mongodb(\+srv)?:\/\//,
          problem: 'MONGODB_URL must be a mongodb:// URL',
          redact: withoutCredentials,
          docDefault: 'unset (embedded store)',
          description:
            '`mongodb://…/<db>`: documents in MongoDB (mongoose); the path names the database (else `FLEET_NAMESPACE`)',
        }),
      ),
      redisUrl: nullable(
        str('REDIS_URL', {
          pattern: /^rediss?:\/\//,
          problem: 'REDIS_URL must be a redis:// URL',
          redact: withoutCredentials,
          docDefault: 'unset (in-process)',
          description:
            '`redis://…`: session leases, live-event fan-out and rate limits in Redis (ioredis)',
        }),
      ),
      nomadAddr: nullable(
        str('NOMAD_ADDR', {
          description: "the Nomad driver's API address (`SANDBOX_DRIVER` then defaults to `nomad`)",
        }),
      ),
    }),
    fleet: section({
      namespace: str('FLEET_NAMESPACE', {
        default: 'agentfleet',
        pattern: /^[a-z][a-z0-9_-]{0,40}$/,
        description:
          'prefix of Kafka topics and consumer groups and of Redis keys; the database name when `MONGODB_URL` has none',
      }),
      kafkaPartitions: int('KAFKA_PARTITIONS', {
        default: 8,
        min: 1,
        max: 1024,
        description: 'partitions of each command topic, created at start (with `<topic>.dlq`)',
      }),
      kafkaReplicationFactor: int('KAFKA_REPLICATION_FACTOR', {
        default: 1,
        min: 1,
        max: 16,
        description: 'replication of those topics',
      }),
      kafkaSessionTimeoutMs: int('KAFKA_SESSION_TIMEOUT_MS', {
        default: 30_000,
        min: 3_000,
        max: 300_000,
        description: "a dead worker's partitions move to another after this long",
      }),
      kafkaHeartbeatIntervalMs: int('KAFKA_HEARTBEAT_INTERVAL_MS', {
        defaultFrom: (ctx) =>
          Math.min(3_000, Math.floor((ctx.get('KAFKA_SESSION_TIMEOUT_MS') as number) / 3)),
        docDefault: '`3000` (at most a third of the session timeout)',
        min: 100,
        max: 60_000,
        check: lowerThan('KAFKA_SESSION_TIMEOUT_MS'),
        description: "a worker's heartbeat to the Kafka group; lower than the session timeout",
      }),
      storeBackends: custom(
        Type.Union([StoreBackendsSchema, Type.Null()]),
        'STORE_BACKENDS',
        (raw, ctx) => parseStoreBackends(raw, ctx.problems),
        {
          default: null,
          check: (v, ctx) =>
            !!v &&
            !v.default &&
            !ctx.get('MONGODB_URL') &&
            'STORE_BACKENDS needs a "default" backend or MONGODB_URL',
          redact: (v) => ({
            default: v!.default === null ? null : withoutCredentials(v!.default),
            backends: Object.fromEntries(
              Object.entries(v!.backends).map(([n, u]) => [n, withoutCredentials(u)]),
            ),
            tenants: v!.tenants,
          }),
          description:
            'JSON placing tenants on MongoDB backends: `{"default":"mongodb://a/agentfleet","backends":{"eu":"mongodb://b/agentfleet"},"tenants":{"tnt_acme":"eu"}}`',
        },
      ),
      perTenantDb: bool('PER_TENANT_DB_ENABLED', {
        check: (v, ctx) =>
          (v || backendsOf(ctx)) &&
          !ctx.get('MONGODB_URL') &&
          !backendsOf(ctx)?.default &&
          'PER_TENANT_DB_ENABLED / STORE_BACKENDS need MongoDB (MONGODB_URL)',
        description:
          "`true`: each tenant's documents live in their own database `<db>_<tenant>`; tenants and API keys stay in `<db>`",
      }),
    }),
  },
  {
    rules: ({ infra }, ctx) => {
      const all = !!(infra.kafkaBrokers && infra.mongodbUrl && infra.redisUrl);
      const fleetMode = !!(infra.kafkaBrokers || infra.mongodbUrl || infra.redisUrl);
      return [
        ctx.role !== 'all' &&
          !all &&
          `role '${ctx.role}' runs as one process of a fleet: KAFKA_BROKERS, MONGODB_URL and REDIS_URL must all be set (use 'all' for one process on embedded adapters)`,
        fleetMode &&
          !ctx.get('PLATFORM_ROOT_SECRET') &&
          'PLATFORM_ROOT_SECRET is required when any real adapter is configured (every process must share it)',
        fleetMode &&
          !ctx.get('API_KEY') &&
          'API_KEY is required when any real adapter is configured (every process must agree on the operator key)',
      ];
    },
  },
);
