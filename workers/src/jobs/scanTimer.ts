/**
 * A periodic scan that never overlaps itself: every `everyMs` it runs `scan` unless the previous
 * run is still going; a failed run is logged and the next tick tries again. `everyMs` 0: no timer.
 * `stop()` clears the timer and waits for a run in flight. The timer does not keep the process
 * alive. Used by the webhook sender's due-time scan and the dream runner's reclaim scan
 * (test/e2e/webhooks/webhooks-restart.test.ts, test/e2e/memory/dreams.test.ts).
 */
import type { Logger } from '@agentfleet/core';

export interface ScanTimer {
  stop(): Promise<void>;
}

export function startScanTimer(
  everyMs: number,
  scan: () => Promise<unknown>,
  log: Logger,
  failure: string,
): ScanTimer {
  let running: Promise<unknown> | null = null;
  const timer =
    everyMs > 0
      ? setInterval(() => {
          if (running) return;
          running = scan()
            .catch((err) => log.error(failure, { err: String(err) }))
            .finally(() => (running = null));
        }, everyMs)
      : null;
  timer?.unref();
  return {
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
