/**
 * kafkajs's request queue schedules its throttle check with a negative delay while nothing is
 * throttled; Node ≥ 23 warns about it on stderr (once per process). Loading the Kafka adapter
 * clamps it (src/adapters/kafka/negativeTimeout.ts). No broker needed: the queue's method runs
 * on a stand-in for its state, as kafkajs calls it before any throttling; the delays it hands
 * to setTimeout are recorded.
 */
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import '../src/bus/kafka/bus.js';

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
  prototype: { scheduleCheckPendingRequests(this: unknown): void };
};

const warnings: string[] = [];
process.on('warning', (w: Error) => warnings.push(w.name));
const delays: number[] = [];
const realSetTimeout = globalThis.setTimeout;
vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
  delays.push(ms ?? 0);
  return realSetTimeout(fn, ms);
}) as typeof setTimeout);
afterEach(() => {
  warnings.length = 0;
  delays.length = 0;
});

const tick = (ms: number) => new Promise((r) => realSetTimeout(r, ms));

describe('kafkajs request queue on Node 24', () => {
  it('the throttle check of an unthrottled queue runs after 1 ms, with no warning', async () => {
    let checks = 0;
    const queue = {
      throttledUntil: -1, // kafkajs's initial value: never throttled
      throttleCheckTimeoutId: null as NodeJS.Timeout | null,
      pending: [] as unknown[],
      checkPendingRequests: () => checks++,
    };
    RequestQueue.prototype.scheduleCheckPendingRequests.call(queue);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    // Already scheduled: a second call adds no timer.
    RequestQueue.prototype.scheduleCheckPendingRequests.call(queue);
    expect(delays).toEqual([1]);
    await tick(20);
    expect(checks).toBe(1);
    expect(queue.throttleCheckTimeoutId).toBeNull();
    expect(warnings).not.toContain('TimeoutNegativeWarning');
  });

  it('a throttled queue still waits until the throttle ends', async () => {
    let checks = 0;
    const queue = {
      throttledUntil: Date.now() + 60,
      throttleCheckTimeoutId: null as NodeJS.Timeout | null,
      pending: [{}],
      checkPendingRequests: () => checks++,
    };
    RequestQueue.prototype.scheduleCheckPendingRequests.call(queue);
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeGreaterThan(40);
    await tick(20);
    expect(checks).toBe(0);
    await tick(80);
    expect(checks).toBe(1);
    expect(warnings).not.toContain('TimeoutNegativeWarning');
  });
});
