/**
 * The worker's deployment scheduler: every worker ticks (`deployments.tick()`, which fires each
 * scheduled minute now due: core/src/deployments/scheduler.ts tickSchedules), and one run per
 * minute results whatever the replica count. Ticks every `tickMs` (DEPLOYMENT_TICK_MS) with the
 * service's clock (Date.now unless a test injected one); 0 disables it. One tick at a time per
 * process; stop waits for the running one. Proved by test/e2e/deployments/deployments-runs.test.ts
 * ("one-minute schedule", "exactly once").
 */
import type { Logger, TickResult } from '@agentfleet/core';
import { startScanTimer, type ScanTimer } from './scanTimer.js';

export function startDeploymentScheduler(opts: {
  tick: () => Promise<TickResult>;
  tickMs: number;
  log: Logger;
}): ScanTimer {
  return startScanTimer(opts.tickMs, opts.tick, (err) =>
    opts.log.warn('deployment scheduler: tick failed', { error: String(err) }),
  );
}
