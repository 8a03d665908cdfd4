/**
 * kafkajs 2.2.4 (its latest release) schedules its request queue's throttle check with
 * `setTimeout(fn, throttledUntil - Date.now())`, and `throttledUntil` is -1 until a broker
 * throttles: the delay is about minus the current time in ms. Node runs a timer with a delay
 * under 1 ms after 1 ms, which is what kafkajs relies on; since Node 23 it also prints a
 * `TimeoutNegativeWarning` on stderr, once per process (upstream: tulios/kafkajs issue 1751, fixed
 * on its main branch, never released). Installed once when the Kafka adapter loads, this makes
 * the same method pass the delay Node uses anyway (at least 1 ms), so a worker's stderr holds
 * only its own lines. It replaces the method only while its source still holds the expression
 * it fixes; a kafkajs that changed it is left alone.
 * Proved by core/test/kafka.negativeTimeout.test.ts (the delays the method hands to setTimeout,
 * no warning), test/e2e/server/built-output.test.ts "role worker: starts on the real servers" (the output
 * of a worker on Kafka starts with its banner) and core/test/bus.test.ts on a broker.
 */
import { createRequire } from 'node:module';

interface RequestQueueLike {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL (src/network/requestQueue/index.js). */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;

let installed = false;

export function clampKafkaRequestQueueTimeout(): void {
  if (installed) return;
  installed = true;
  const require = createRequire(import.meta.url);
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: RequestQueueLike;
  };
  const proto = RequestQueue.prototype;
  if (!String(proto.scheduleCheckPendingRequests).includes('this.throttledUntil - Date.now()'))
    return;
  // kafkajs's method, with the delay clamped as Node clamps it.
  proto.scheduleCheckPendingRequests = function (this: RequestQueueLike) {
    let scheduleAt = this.throttledUntil - Date.now();
    if (this.throttleCheckTimeoutId) return;
    if (this.pending.length > 0)
      scheduleAt = scheduleAt > 0 ? scheduleAt : CHECK_PENDING_REQUESTS_INTERVAL;
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      Math.max(1, scheduleAt),
    );
  };
}
