import { exec } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { embeddedCoordination } from '../src/coordination/embedded.js';
import { createRedisCoordination } from '../src/coordination/redis.js';
import type { Coordination } from '../src/coordination/port.js';
import { coordinationContract, eventually } from './coordination.contract.js';
import { withFaultLock } from './faultLock.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const REDIS_URL = process.env.REDIS_URL;
const REDIS_RESTART_CMD = process.env.REDIS_RESTART_CMD;
/** The instance REDIS_RESTART_CMD bounces; defaults to REDIS_URL. A separate instance keeps the
 * restart from disturbing other test files that use REDIS_URL at the same time. */
const REDIS_RESTART_URL = process.env.REDIS_RESTART_URL || REDIS_URL;
let seq = 0;
const unique = (base: string) => `t_${base}_${Date.now().toString(36)}_${process.pid}_${seq++}`;

coordinationContract('embedded', async () => {
  const c = embeddedCoordination();
  return { c, cleanup: () => c.close() };
});

describe.skipIf(!REDIS_URL)('redis coordination', () => {
  coordinationContract('redis', async () => {
    const c = await createRedisCoordination(REDIS_URL!);
    return { c, cleanup: () => c.close() };
  });

  const open = async (keyPrefix?: string) =>
    createRedisCoordination(REDIS_URL!, keyPrefix === undefined ? {} : { keyPrefix });

  it('shares leases, pub/sub and rate limits between separate clients (processes)', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    try {
      const key = unique('shared');
      const la = await a.leases.acquire(key, 'a', 10_000);
      expect(la).not.toBeNull();
      expect(await b.leases.acquire(key, 'b', 10_000)).toBeNull();
      expect(await b.leases.holder(key)).toMatchObject({ owner: 'a', token: la!.token });
      await a.leases.release(la!);
      const lb = await b.leases.acquire(key, 'b', 10_000);
      expect(lb!.token).toBeGreaterThan(la!.token);

      const ch = unique('shared');
      const got: unknown[] = [];
      const un = await b.pubsub.subscribe(ch, (m) => got.push(m));
      for (let i = 0; i < 10; i++) await a.pubsub.publish(ch, { i });
      await eventually(() => got.length === 10, '10 messages across clients');
      expect(got).toEqual(Array.from({ length: 10 }, (_, i) => ({ i })));
      await un();

      const rl = unique('shared');
      await a.rateLimiter.consume(rl, 2, 60_000);
      await b.rateLimiter.consume(rl, 2, 60_000);
      const third = await a.rateLimiter.consume(rl, 2, 60_000);
      if (third.allowed)
        expect(third.remaining).toBe(1); // a window boundary fell between the calls
      else expect(third.remaining).toBe(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('keeps key prefixes apart', async () => {
    const [a, b] = await Promise.all([open(unique('pa') + ':'), open(unique('pb') + ':')]);
    try {
      expect(await a.leases.acquire('same-key', 'a', 10_000)).not.toBeNull();
      expect(await b.leases.acquire('same-key', 'b', 10_000)).not.toBeNull();
      const got: unknown[] = [];
      const un = await b.pubsub.subscribe('same-channel', (m) => got.push(m));
      await a.pubsub.publish('same-channel', 'from a');
      await b.pubsub.publish('same-channel', 'from b');
      await eventually(() => got.length >= 1, 'own message');
      await new Promise((r) => setTimeout(r, 50));
      expect(got).toEqual(['from b']);
      await un();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('subscribes concurrently to one channel with a single Redis subscription and unsubscribes when the last handler leaves', async () => {
    const c = await open();
    const probe = await open();
    try {
      const ch = unique('multiplex');
      const fullChannel = `agentfleet:${ch}`;
      const counts = [0, 0, 0];
      const uns = await Promise.all(
        counts.map((_, i) => c.pubsub.subscribe(ch, () => counts[i]!++)),
      );
      const numsub = async () => {
        // PUBSUB NUMSUB through a raw connection: Redis-side subscribers of the channel.
        const r = new Redis(REDIS_URL!, { lazyConnect: true });
        try {
          await r.connect();
          const reply = (await r.call('PUBSUB', 'NUMSUB', fullChannel)) as [string, number];
          return Number(reply[1]);
        } finally {
          r.disconnect();
        }
      };
      expect(await numsub()).toBe(1);
      await probe.pubsub.publish(ch, 'x');
      await eventually(() => counts.every((n) => n === 1), 'one delivery per handler');
      await uns[0]!();
      await uns[1]!();
      expect(await numsub()).toBe(1);
      await uns[2]!();
      await eventually(async () => (await numsub()) === 0, 'redis unsubscribe');
    } finally {
      await Promise.all([c.close(), probe.close()]);
    }
  });

  it('keeps fencing tokens increasing when Redis loses the fence counter (restart without persistence, flush)', async () => {
    const c = await open();
    const raw = new Redis(REDIS_URL!, { lazyConnect: true });
    try {
      await raw.connect();
      const key = unique('fencelost');
      const a = await c.leases.acquire(key, 'w1', 10_000);
      await c.leases.release(a!);
      expect(await raw.del(`agentfleet:fence:${key}`)).toBe(1);
      const b = await c.leases.acquire(key, 'w2', 10_000);
      expect(b!.token).toBeGreaterThan(a!.token);
      // The fence key expires on its own instead of piling up one key per lease key forever.
      expect(await raw.pttl(`agentfleet:fence:${key}`)).toBeGreaterThan(0);
      expect(await raw.pttl(`agentfleet:lease:${key}`)).toBeGreaterThan(9_000);
    } finally {
      raw.disconnect();
      await c.close();
    }
  });

  it('fails fast with a clear error when Redis is unreachable, and close() is idempotent', async () => {
    const t0 = Date.now();
    await expect(createRedisCoordination('redis://127.0.0.1:1')).rejects.toThrow(
      /redis coordination: cannot connect to redis:\/\/127\.0\.0\.1:1/,
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
    const c = await open();
    expect(await c.healthy()).toBe(true);
    await c.close();
    await c.close();
    expect(await c.healthy()).toBe(false);
  });
});

describe.skipIf(!REDIS_URL || !REDIS_RESTART_CMD)(
  'redis coordination across a Redis restart',
  () => {
    it(
      're-establishes subscriptions and serves leases again, with fencing tokens still increasing',
      () =>
        withFaultLock(async () => {
          const c: Coordination = await createRedisCoordination(REDIS_RESTART_URL!);
          const publisher: Coordination = await createRedisCoordination(REDIS_RESTART_URL!);
          try {
            const ch = unique('restart');
            const got: Array<{ phase: string; i: number }> = [];
            const un = await c.pubsub.subscribe(ch, (m) =>
              got.push(m as { phase: string; i: number }),
            );
            await publisher.pubsub.publish(ch, { phase: 'before', i: 0 });
            await eventually(() => got.length === 1, 'message before the restart');

            const key = unique('restart');
            const before = await c.leases.acquire(key, 'w1', 60_000);
            expect(before).not.toBeNull();
            await c.leases.release(before!);

            await promisify(exec)(REDIS_RESTART_CMD!, { cwd: repoRoot, timeout: 60_000 });

            // Both clients reconnect on their own; healthy() turns true once the subscriber is back.
            await eventually(() => c.healthy(), 'healthy after the restart', 30_000);
            await eventually(
              () => publisher.healthy(),
              'publisher healthy after the restart',
              30_000,
            );

            // Pub/sub is fire-and-forget: publish until one arrives, then check order from there on.
            let i = 0;
            await eventually(
              async () => {
                await publisher.pubsub.publish(ch, { phase: 'after', i: ++i }).catch(() => {});
                await new Promise((r) => setTimeout(r, 50));
                return got.some((m) => m.phase === 'after');
              },
              'message after the restart',
              30_000,
            );
            const firstAfter = got.findIndex((m) => m.phase === 'after');
            for (let k = 0; k < 5; k++) await publisher.pubsub.publish(ch, { phase: 'tail', i: k });
            await eventually(
              () => got.filter((m) => m.phase === 'tail').length === 5,
              'tail messages',
            );
            expect(
              got
                .slice(firstAfter)
                .filter((m) => m.phase === 'tail')
                .map((m) => m.i),
            ).toEqual([0, 1, 2, 3, 4]);

            const after = await c.leases.acquire(key, 'w2', 60_000);
            expect(after).not.toBeNull();
            expect(after!.token).toBeGreaterThan(before!.token);
            expect(await publisher.leases.acquire(key, 'w3', 60_000)).toBeNull();
            expect(await c.leases.renew(after!, 60_000)).toBe(true);
            await c.leases.release(after!);
            expect((await c.rateLimiter.consume(unique('restart'), 1, 60_000)).allowed).toBe(true);
            await un();
          } finally {
            await Promise.all([c.close(), publisher.close()]);
          }
        }),
      120_000,
    );
  },
);
