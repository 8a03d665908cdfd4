/**
 * The real servers (Kafka, FerretDB/MongoDB, Redis) for sections e–g: whether they are
 * configured (REDIS_URL, KAFKA_BROKERS and MONGODB_URL, as written to fleet.env by
 * `npm run infra:up`), the env that puts a platform on them under its own FLEET_NAMESPACE, and a
 * best-effort removal of that namespace afterwards (its database, topics, consumer groups and
 * Redis keys), so repeated runs do not pile up data on the shared servers.
 */
import { randomBytes } from 'node:crypto';

export const SKIP_LINE =
  'skipped: real servers not configured (npm run infra:up; source fleet.env)';

export interface RealServers {
  redisUrl: string;
  kafkaBrokers: string;
  mongodbUrl: string;
}

export type RealConfig = { servers: RealServers } | { servers: null; reason: string };

const LOOPBACK = new Set(['127.0.0.1', 'localhost']);

/** The host list of a mongodb:// URL (`h1:p1,h2:p2`), without credentials. */
const mongoHostList = (url: string) =>
  /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]*)/.exec(url)?.[1] ?? '';
const mongoHosts = (url: string) =>
  mongoHostList(url)
    .split(',')
    .map((h) => h.replace(/:\d+$/, ''));

/** The real servers from the environment, or why they are not used. Only 127.0.0.1 servers are used. */
export function realConfig(env: Record<string, string | undefined> = process.env): RealConfig {
  const names = ['REDIS_URL', 'KAFKA_BROKERS', 'MONGODB_URL'] as const;
  const missing = names.filter((n) => !env[n]);
  if (missing.length === names.length) return { servers: null, reason: SKIP_LINE };
  if (missing.length)
    return { servers: null, reason: `${SKIP_LINE}; missing: ${missing.join(', ')}` };
  const servers: RealServers = {
    redisUrl: env.REDIS_URL!,
    kafkaBrokers: env.KAFKA_BROKERS!,
    mongodbUrl: env.MONGODB_URL!,
  };
  let hosts: string[];
  try {
    hosts = [
      new URL(servers.redisUrl).hostname,
      ...servers.kafkaBrokers.split(',').map((b) => b.trim().replace(/:\d+$/, '')),
      ...mongoHosts(servers.mongodbUrl),
    ];
  } catch (err) {
    return {
      servers: null,
      reason: `skipped: cannot parse the real servers' URLs (${(err as Error).message})`,
    };
  }
  const remote = hosts.filter((h) => !LOOPBACK.has(h));
  if (remote.length)
    return {
      servers: null,
      reason: `skipped: the bench only talks to 127.0.0.1; real servers on ${[...new Set(remote)].join(', ')}`,
    };
  return { servers };
}

/** host:port of each server, for the run's header (no paths, no credentials). */
export function describeServers(r: RealServers): string {
  const redis = new URL(r.redisUrl);
  return `redis ${redis.hostname}:${redis.port}, kafka ${r.kafkaBrokers}, mongodb ${mongoHostList(r.mongodbUrl)}`;
}

/** A fresh FLEET_NAMESPACE (^[a-z][a-z0-9_-]{0,40}$): isolates topics, groups, keys and the database. */
export const newNamespace = (tag: string): string =>
  `bench-${tag}-${randomBytes(4).toString('hex')}`;

/** Env that puts a platform process on the real servers under `namespace` (as test/kit/harness.ts realAdapterEnv). */
export function realAdapterEnv(r: RealServers, namespace: string): Record<string, string> {
  const mongo = new URL(r.mongodbUrl.replace(/^mongodb:/, 'http:'));
  mongo.pathname = `/${namespace}`;
  return {
    KAFKA_BROKERS: r.kafkaBrokers,
    REDIS_URL: r.redisUrl,
    MONGODB_URL: mongo.toString().replace(/^http:/, 'mongodb:'),
    FLEET_NAMESPACE: namespace,
    // A stopped process's partitions move on after 6 s instead of Kafka's default 30 s.
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
  };
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]);
};

// The server clients are the platform's own dependencies (core's), loaded at run time.
const load = (name: string): Promise<any> => import(name);

/**
 * Removes everything the platform left under `namespace`: the MongoDB database, the Kafka topics
 * and consumer groups named `<namespace>.…`, the Redis keys `<namespace>:…`. Best effort, each step
 * bounded in time; returns a one-line summary.
 */
export async function dropNamespace(r: RealServers, namespace: string): Promise<string> {
  const done: string[] = [];
  const failed: string[] = [];
  const step = async (name: string, fn: () => Promise<string>) => {
    try {
      done.push(await withTimeout(fn(), 15_000, name));
    } catch (err) {
      failed.push(`${name}: ${(err as Error).message}`);
    }
  };
  await step('mongodb', async () => {
    const { MongoClient } = await load('mongodb');
    const client = new MongoClient(realAdapterEnv(r, namespace).MONGODB_URL, {
      serverSelectionTimeoutMS: 5000,
    });
    try {
      await client.connect();
      await client.db(namespace).dropDatabase();
      return 'database';
    } finally {
      await client.close();
    }
  });
  await step('kafka', async () => {
    const { Kafka, logLevel } = await load('kafkajs');
    const admin = new Kafka({
      clientId: `${namespace}-cleanup`,
      brokers: r.kafkaBrokers.split(',').map((b) => b.trim()),
      logLevel: logLevel.NOTHING,
      connectionTimeout: 5000,
      requestTimeout: 10_000,
      retry: { retries: 2 },
    }).admin();
    await admin.connect();
    try {
      const prefix = `${namespace}.`;
      const topics = ((await admin.listTopics()) as string[]).filter((t) => t.startsWith(prefix));
      if (topics.length) await admin.deleteTopics({ topics, timeout: 10_000 });
      const groups = ((await admin.listGroups()).groups as Array<{ groupId: string }>)
        .map((g) => g.groupId)
        .filter((g) => g.startsWith(prefix));
      // A group that still has members (a process that did not stop) cannot be deleted: say so, keep going.
      const kept = groups.length
        ? await admin.deleteGroups(groups).then(
            () => '',
            (err: Error) => ` (consumer groups not removed: ${err.message})`,
          )
        : '';
      return `${topics.length} topics, ${groups.length} consumer groups${kept}`;
    } finally {
      await admin.disconnect();
    }
  });
  await step('redis', async () => {
    const { Redis } = await load('ioredis');
    const redis = new Redis(r.redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
    });
    await redis.connect();
    try {
      let cursor = '0';
      let keys = 0;
      for (let i = 0; i < 1000; i++) {
        const [next, batch] = (await redis.scan(
          cursor,
          'MATCH',
          `${namespace}:*`,
          'COUNT',
          1000,
        )) as [string, string[]];
        if (batch.length) keys += await redis.unlink(...batch);
        cursor = next;
        if (cursor === '0') break;
      }
      return `${keys} redis keys`;
    } finally {
      redis.disconnect();
    }
  });
  return `namespace ${namespace} removed: ${done.join(', ') || 'nothing'}${failed.length ? `; not removed: ${failed.join('; ')}` : ''}`;
}
