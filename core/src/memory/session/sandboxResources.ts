/**
 * The sandbox manager's `resources` with the session's memory stores appended (./mount.ts):
 * every warmup writes each store's directory, memories and manifest after the other resources;
 * a store that cannot be read throws, which fails the warmup (../../sandbox/manager/warmup.ts step 4).
 */
import type { Collections } from '../../store/collections.js';
import type { SessionRef } from '../../sandbox/port.js';
import type { SandboxResource } from '../../sandbox/manager/types.js';
import { memoryMountResources } from './mount.js';
import { memoryReader } from './readers.js';
import { isMemoryResource } from './resources.js';

export function withMemoryMounts(
  p: { collections: Collections },
  others: (s: SessionRef) => Promise<SandboxResource[]>,
): (s: SessionRef) => Promise<SandboxResource[]> {
  return async (s) => {
    const list = await others(s);
    const session = await p.collections.sessions.get(s.tenantId, s.sessionId);
    const stores = (session?.resources ?? []).filter(isMemoryResource);
    if (!stores.length) return list;
    return [
      ...list,
      ...(await memoryMountResources(memoryReader(p.collections), s.tenantId, stores)),
    ];
  };
}
