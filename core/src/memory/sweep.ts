/**
 * Memory version retention (spec: "daily sweep at 03:00 UTC keeps the newest version and prunes
 * older ones after 30 days").
 *
 * Guarantees:
 * - `sweepVersions(c, nowMs)` deletes every version created more than 30 days before `nowMs`
 *   that is not its memory's newest version (newest by id: ids are time-ordered); the newest is
 *   kept however old, also after the memory was deleted (its `deleted` version). Idempotent, so
 *   two sweeps racing delete nothing twice and nothing more.
 * - The worker's timer (workers/src/jobs/memorySweeper.ts) fires at 03:00 UTC every day
 *   (SWEEP_SCHEDULE), and only the replica holding the `memory:version-sweep` lease sweeps
 *   (`sweepUnderLease`); the others skip that day.
 *   The instant it passes is the injectable clock's, so tests call `sweepVersions` with a fake
 *   instant instead of waiting for 03:00.
 * Proved by test/e2e/memory/memory-stores.test.ts ("retention sweep").
 */
import { Cron } from 'croner';
import type { Collections } from '../store/collections.js';
import type { LeaseStore } from '../coordination/port.js';
import type { MemoryVersionDoc } from './records.js';

export const VERSION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
export const SWEEP_SCHEDULE = '0 3 * * *';
export const SWEEP_LEASE_KEY = 'memory:version-sweep';
const BATCH = 500;

export async function sweepVersions(c: Collections, nowMs: number): Promise<{ pruned: number }> {
  const cutoff = nowMs - VERSION_RETENTION_MS;
  const newest = new Map<string, string | null>();
  let pruned = 0;
  let after = '';
  for (;;) {
    const filter = { created_ms: { $lt: cutoff }, ...(after ? { _id: { $gt: after } } : {}) };
    const batch: MemoryVersionDoc[] = await c.memoryVersions.scanAll(filter, {
      sort: { _id: 1 },
      limit: BATCH,
    });
    for (const v of batch) {
      const key = `${v.tenant_id}\u0000${v.memory_id}`;
      if (!newest.has(key)) {
        const top = await c.memoryVersions.findOne(
          v.tenant_id,
          { store_id: v.store_id, memory_id: v.memory_id },
          { sort: { _id: -1 } },
        );
        newest.set(key, top?._id ?? null);
      }
      if (newest.get(key) === v._id) continue;
      pruned += await c.memoryVersions.deleteOne(v.tenant_id, { _id: v._id });
    }
    if (batch.length < BATCH) break;
    after = batch[batch.length - 1]!._id;
  }
  return { pruned };
}

/** The next 03:00 UTC strictly after `nowMs`. */
export function nextSweepAt(nowMs: number): number {
  const cron = new Cron(SWEEP_SCHEDULE, { timezone: 'UTC', paused: true });
  return cron.nextRun(new Date(nowMs))!.getTime();
}

/**
 * One sweep under the `memory:version-sweep` lease: null when another replica holds it (that
 * replica sweeps), else the sweep's result. What the daily timer runs.
 */
export async function sweepUnderLease(opts: {
  sweep: (nowMs: number) => Promise<{ pruned: number }>;
  clock: () => number;
  leases: LeaseStore;
  owner: string;
}): Promise<{ pruned: number } | null> {
  const lease = await opts.leases.acquire(SWEEP_LEASE_KEY, opts.owner, 60 * 60 * 1000);
  if (!lease) return null;
  try {
    return await opts.sweep(opts.clock());
  } finally {
    await opts.leases.release(lease);
  }
}
