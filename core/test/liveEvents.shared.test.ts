/**
 * sharedSubscribe (core/src/events/live.ts) on the embedded pub/sub: many local followers
 * of a channel share one pubsub subscription; a tick's messages reach each follower as ONE
 * batch, in publish order, the same array for every follower; the last follower leaving
 * releases the subscription, and a later follower starts a fresh one.
 */
import { describe, expect, it } from 'vitest';
import { MemoryPubSub } from '../src/coordination/embedded.js';
import { sharedSubscribe } from '../src/events/live.js';
import type { PubSub } from '../src/coordination/port.js';

/** The embedded pub/sub, counting the subscriptions made on it and those still open. */
function countingPubSub() {
  const inner = new MemoryPubSub();
  const counts = { subscribed: 0, open: 0 };
  const pubsub: PubSub = {
    publish: (channel, message) => inner.publish(channel, message),
    async subscribe(channel, handler) {
      counts.subscribed++;
      counts.open++;
      const off = await inner.subscribe(channel, handler);
      return async () => {
        counts.open--;
        await off();
      };
    },
  };
  return { pubsub, counts };
}

const nextImmediate = () => new Promise((r) => setImmediate(r));

describe('sharedSubscribe', () => {
  it('one pubsub subscription for many followers; a tick’s messages arrive as one shared batch, in order', async () => {
    const { pubsub, counts } = countingPubSub();
    const got: Array<Array<readonly unknown[]>> = [[], [], []];
    const offs = await Promise.all(
      got.map((mine) => sharedSubscribe(pubsub, 'session:s1', (batch) => mine.push(batch))),
    );
    expect(counts).toEqual({ subscribed: 1, open: 1 });
    for (let i = 0; i < 5; i++) await pubsub.publish('session:s1', { n: i });
    await pubsub.publish('session:other', { n: 99 });
    await nextImmediate();
    await nextImmediate();
    for (const mine of got) {
      expect(mine).toHaveLength(1);
      expect(mine[0]).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
      // The same array (and the same message objects) for every follower.
      expect(mine[0]).toBe(got[0]![0]);
    }
    // A later tick is a later batch.
    await pubsub.publish('session:s1', { n: 5 });
    await nextImmediate();
    expect(got[2]!.map((b) => b.length)).toEqual([5, 1]);

    await offs[0]!();
    await offs[1]!();
    expect(counts.open).toBe(1);
    await offs[2]!();
    await offs[2]!(); // idempotent
    expect(counts).toEqual({ subscribed: 1, open: 0 });

    const again: Array<readonly unknown[]> = [];
    const off = await sharedSubscribe(pubsub, 'session:s1', (b) => again.push(b));
    expect(counts).toEqual({ subscribed: 2, open: 1 });
    await pubsub.publish('session:s1', { n: 6 });
    await nextImmediate();
    expect(again).toEqual([[{ n: 6 }]]);
    await off();
    expect(counts.open).toBe(0);
  });
});
