/**
 * The worker's dream runner: claims and runs dreams from `dream.run.requested` bus commands
 * (consumer group `dream-runner`) and from the scan for dreams whose command was lost or whose
 * worker died, every DREAM_SCAN_MS (0: no timer). Claiming, running and releasing are core's
 * (`dreams.claimAndRun`, `dreams.sweep`, `dreams.releaseRunning`, core/src/dreams/dreams.ts);
 * this file owns the consumer, the timer and the stop order: timer, consumer, then the in-flight
 * dreams stop and are released for another replica. Proved by test/e2e/memory/dreams.test.ts
 * and test/e2e/memory/dreams-update.test.ts.
 */
import type { CommandBus, DreamService, Logger } from '@agentfleet/core';
import { startScanTimer } from './scanTimer.js';

export interface DreamRunner {
  stop(): Promise<void>;
}

export async function startDreamRunner(opts: {
  bus: Pick<CommandBus, 'consume'>;
  dreams: Pick<DreamService, 'claimAndRun' | 'sweep' | 'releaseRunning'>;
  scanMs: number;
  log: Logger;
}): Promise<DreamRunner> {
  const { dreams } = opts;
  const consumer = await opts.bus.consume('dream-runner', {
    'dream.run.requested': async (cmd) => {
      await dreams.claimAndRun(cmd.payload.tenant_id, cmd.payload.dream_id);
    },
  });
  const scans = startScanTimer(
    opts.scanMs,
    () => dreams.sweep(),
    (err) => opts.log.error('dream scan failed', { err: String(err) }),
  );
  return {
    stop: async () => {
      await scans.stop();
      await consumer.stop();
      await dreams.releaseRunning();
    },
  };
}
