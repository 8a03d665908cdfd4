/**
 * The collections a platform reads through its in-process caches (./readCache.ts):
 * - agents through an exact DocReadCache, only when this process is the store's only writer
 *   (`exclusive`: the embedded store, which holds its data dir's lock); test/e2e/agents/agent-cache.test.ts;
 * - model cards and webhook endpoints, read on every turn and written rarely, through a
 *   QueryReadCache kept until the next write; on a shared store (not `exclusive`) every process
 *   announces its writes over `pubsub` and results expire after SHARED_QUERY_CACHE_TTL_MS
 *   (test/e2e/fleet/query-cache.test.ts).
 * `close` stops listening for other processes' write announcements.
 */
import type { PubSub } from '../coordination/port.js';
import type { AgentDoc } from '../agents/records.js';
import { COLLECTIONS, openCollections, type Collections, type StoreRouter } from './collections.js';
import {
  AGENT_CACHE_MAX,
  DocReadCache,
  InvalidatingCollection,
  QUERY_CACHE_MAX,
  QueryReadCache,
  SHARED_QUERY_CACHE_TTL_MS,
  announceWrites,
} from './readCache.js';

export interface CachedCollections {
  collections: Collections;
  /** Agent documents held by the agent cache (0 without one). */
  agentCacheSize(): number;
  close(): Promise<void>;
}

export async function openCachedCollections(
  router: StoreRouter,
  pubsub: PubSub,
  exclusive: boolean,
): Promise<CachedCollections> {
  const collections = openCollections(router);
  const agentCache = exclusive ? new DocReadCache<AgentDoc>(AGENT_CACHE_MAX) : null;
  if (agentCache)
    collections.agents = new InvalidatingCollection(COLLECTIONS.agents, router, agentCache);
  const announcers: Array<() => Promise<void>> = [];
  const shared = !exclusive;
  for (const name of ['modelCards', 'webhookEndpoints'] as const) {
    const cache = new QueryReadCache(QUERY_CACHE_MAX, shared ? SHARED_QUERY_CACHE_TTL_MS : 0);
    const spec = COLLECTIONS[name];
    const writes = shared ? await announceWrites(pubsub, spec.name, cache) : null;
    if (writes) announcers.push(writes.stop);
    (collections as Record<typeof name, unknown>)[name] = new InvalidatingCollection(
      spec,
      router,
      cache,
      writes?.announce,
    );
  }
  return {
    collections,
    agentCacheSize: () => agentCache?.size ?? 0,
    async close() {
      for (const stop of announcers) await stop().catch(() => {});
    },
  };
}
