/**
 * A periodic scan that never overlaps itself: every `everyMs` it runs `scan` unless the previous
 * run is still going; a failed run goes to `onError` (the caller's log line) and the next tick tries
 * again. `everyMs` 0: no timer. `stop()` clears the timer and waits for a run in flight. The timer
 * does not keep the process alive. Used by the webhook sender's due-time scan, the dream runner's
 * reclaim scan and the deployment scheduler's tick (test/e2e/webhooks/webhooks-restart.test.ts,
 * test/e2e/memory/dreams.test.ts, test/e2e/deployments/deployments-runs.test.ts).
 */

export interface ScanTimer {
  stop(): Promise<void>;
}

export function startScanTimer(
  everyMs: number,
  scan: () => Promise<unknown>,
  onError: (err: unknown) => void,
): ScanTimer {
  let running: Promise<unknown> | null = null;
  const timer =
    everyMs > 0
      ? setInterval(() => {
          if (running) return;
          running = scan()
            .catch(onError)
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
