/**
 * The worker's memory version sweeper: fires at 03:00 UTC every day (SWEEP_SCHEDULE, croner,
 * never two runs at once), and the replica holding the `memory:version-sweep` lease sweeps
 * (`sweepUnderLease`, core/src/memory/sweep.ts); the others skip that day. The instant the sweep
 * gets is the injectable clock's. `enabled: false` starts nothing; stop waits for a running
 * sweep. Proved by test/e2e/memory/memory-versions.test.ts ("the timer fires at 03:00 UTC").
 */
import { Cron } from 'croner';
import { sweepUnderLease, SWEEP_SCHEDULE, type LeaseStore, type Logger } from '@agentfleet/core';

export interface RunningSweeper {
  stop(): Promise<void>;
}

export function startMemoryVersionSweeper(opts: {
  sweep: (nowMs: number) => Promise<{ pruned: number }>;
  clock: () => number;
  leases: LeaseStore;
  owner: string;
  log: Logger;
  enabled?: boolean;
}): RunningSweeper {
  if (opts.enabled === false) return { stop: async () => {} };
  let running: Promise<unknown> | null = null;
  const cron = new Cron(SWEEP_SCHEDULE, { timezone: 'UTC', protect: true }, () => {
    running = sweepUnderLease(opts)
      .then((r) => r && opts.log.info('memory version sweep done', { pruned: r.pruned }))
      .catch((err) => opts.log.warn('memory version sweep failed', { error: String(err) }))
      .finally(() => (running = null));
  });
  return {
    async stop() {
      cron.stop();
      await running;
    },
  };
}
