/**
 * Claiming Work is an atomic compare-and-swap: of 10 pollers racing for one item, exactly one
 * wins, whether the item is already queued (non-blocking polls) or arrives while they all
 * long-poll (block_ms), and for several items each is claimed exactly once. On the real
 * adapters (CI: FerretDB for the store, Redis for the leases and the long-poll wake-up) the same
 * tests run through findOneAndUpdate, plus the race across two platform instances sharing the
 * store and Redis (REAL only), where an acknowledged item's Redis lease keeps the other
 * instance from reclaiming it. Proves core/src/work/work.ts (tryClaim).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL, realAdapterEnv, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { bearerClient, newSession, sessionsToken, workEnv } from '../../kit/workHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const POLLERS = 10;

describe('Work claim race', () => {
  it('10 pollers, one winner: a queued item is claimed exactly once', async () => {
    const w = await workEnv(t, 'race-queued');
    const session = await newSession(t, w);
    const clients = Array.from({ length: POLLERS }, () => bearerClient(t, w.envKey));
    const results = await Promise.all(
      clients.map((c, i) =>
        c.beta.environments.work.poll(w.envId, { 'Anthropic-Worker-ID': `racer-${i}` }),
      ),
    );
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.data.id).toBe(session.id);
    sessionsToken(winners[0]!.secret);
    const stats = await t.client.beta.environments.work.stats(w.envId);
    expect(stats).toMatchObject({ depth: 0, pending: 1, workers_polling: POLLERS });
  });

  it('10 long-polling pollers, one winner: an item enqueued while they wait', async () => {
    const w = await workEnv(t, 'race-blocked');
    const clients = Array.from({ length: POLLERS }, () => bearerClient(t, w.envKey));
    const polls = clients.map((c) => c.beta.environments.work.poll(w.envId, { block_ms: 999 }));
    const session = await newSession(t, w);
    const results = await Promise.all(polls);
    const winners = results.filter((r) => r !== null);
    // Every poller either won the item or saw nothing; the item was claimed at most once, and
    // exactly once once a poll after the race ran.
    expect(winners.length).toBeLessThanOrEqual(1);
    if (winners.length === 0) {
      const late = await clients[0]!.beta.environments.work.poll(w.envId);
      expect(late?.data.id).toBe(session.id);
    } else expect(winners[0]!.data.id).toBe(session.id);
    expect(await clients[1]!.beta.environments.work.poll(w.envId)).toBeNull();
  });

  it('three items and 10 pollers: each item is claimed exactly once', async () => {
    const w = await workEnv(t, 'race-many');
    const sessions = [await newSession(t, w), await newSession(t, w), await newSession(t, w)];
    const clients = Array.from({ length: POLLERS }, () => bearerClient(t, w.envKey));
    const results = await Promise.all(clients.map((c) => c.beta.environments.work.poll(w.envId)));
    // Pollers that lost a race move on to the next item, so every item is won by one poller.
    const won = results.filter((r) => r !== null).map((r) => r!.data.id);
    expect(new Set(won).size).toBe(won.length);
    const rest = [];
    for (;;) {
      const more = await clients[0]!.beta.environments.work.poll(w.envId);
      if (!more) break;
      rest.push(more.data.id);
    }
    expect([...won, ...rest].sort()).toEqual(sessions.map((s) => s.id).sort());
  });

  it.runIf(REAL)(
    'two platform instances on the shared real store: one winner, leases in Redis',
    async () => {
      const shared = realAdapterEnv();
      const a = await startPlatform({ env: { SANDBOX_DRIVER: 'none', ...shared } });
      const b = await startPlatform({
        env: { SANDBOX_DRIVER: 'none', ...shared, API_KEY: a.operatorKey },
      });
      try {
        const w = await workEnv(a, 'fleet-race');
        await newSession(a, w);
        const clients = Array.from({ length: POLLERS }, (_, i) =>
          bearerClient(i % 2 ? b : a, w.envKey),
        );
        const results = await Promise.all(
          clients.map((c) => c.beta.environments.work.poll(w.envId)),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        const item = winners[0]!;
        const owner = bearerClient(a, sessionsToken(item.secret)).beta.environments.work;
        await owner.ack(item.id, { environment_id: w.envId });
        await owner.heartbeat(item.id, {
          environment_id: w.envId,
          expected_last_heartbeat: 'NO_HEARTBEAT',
          desired_ttl_seconds: 60,
        });
        // The lease lives in Redis: the other instance does not reclaim it.
        const other = bearerClient(b, w.envKey).beta.environments.work;
        expect(await other.poll(w.envId, { reclaim_older_than_ms: 1 })).toBeNull();
        // The claim's token works on the other instance too (the claim is read from the store).
        const onB = bearerClient(b, sessionsToken(item.secret));
        expect((await onB.beta.sessions.retrieve(item.data.id)).id).toBe(item.data.id);
      } finally {
        await b.close();
        await a.close();
      }
    },
  );
});
