/**
 * The worker's sandbox backup sweeper: every `everyMs` (default 1 h; 0: never) it runs the
 * sandbox manager's `sweepBackups()` (snapshots older than the backup TTL and pointers to them,
 * core/src/sandbox/manager/storage.ts); a failed sweep is logged and the next tick tries again.
 * The timer does not keep the process alive; stop clears it. The sweep itself is proved by
 * core/test/sandbox.manager.test.ts ("backups older than 7 days are swept").
 */
import type { Logger, SandboxManagerService } from '@agentfleet/core';

export const BACKUP_SWEEP_EVERY_MS = 3600_000;

export interface RunningBackupSweeper {
  stop(): Promise<void>;
}

export function startBackupSweeper(opts: {
  sandboxes: Pick<SandboxManagerService, 'sweepBackups'>;
  log: Logger;
  everyMs?: number;
}): RunningBackupSweeper {
  const everyMs = opts.everyMs ?? BACKUP_SWEEP_EVERY_MS;
  if (everyMs <= 0) return { stop: async () => {} };
  const timer = setInterval(() => {
    opts.sandboxes.sweepBackups().catch((err) =>
      opts.log.warn('sweeping sandbox backups failed', {
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  }, everyMs);
  timer.unref?.();
  return {
    async stop() {
      clearInterval(timer);
    },
  };
}
