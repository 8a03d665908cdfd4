/**
 * The worker's session log cache (workers/src/turn/sessionLogCache.ts): a turn reads only the
 * events appended since its last read. Proves, against an in-process platform and the scripted
 * model: the next turn's model request carries the whole conversation, including events the worker
 * did not append itself (written to the log by another EventLog, as another process would); input
 * appended in the worker's process reaches its cache through the append hook, so the turn that
 * consumes it reads no events from the store; `all` equals the store's own full read after every
 * append; cached events are frozen; the byte bound holds (a log over it is served whole but not
 * kept, least recently used sessions go first); `forget` drops an entry; an array it returned never
 * changes, and the worker's own append delivered while a read is out is kept once.
 */
import { EventLog } from '@agentfleet/core';
import { SessionLogCache } from '@agentfleet/workers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';

const TENANT = 'tnt_default';
let t: TestPlatform;
let agentId: string;
let envId: string;

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  agentId = (await t.client.beta.agents.create({ name: 'log-cache', model: 'claude-sonnet-4-5' }))
    .id;
  envId = (await t.client.beta.environments.create({ name: 'log-cache' })).id;
});
afterAll(async () => {
  await t?.close();
});

const newSession = async () =>
  (await t.client.beta.sessions.create({ agent: agentId, environment_id: envId })).id;
const text = (s: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text: s }],
});

async function turn(sid: string, message: string) {
  const before = t.model.requests.length;
  const sent = (await t.client.beta.sessions.events.send(sid, { events: [text(message)] })) as any;
  const seq = sent.data.at(-1).seq as number;
  await waitFor(async () => {
    const evs = (await t.client.beta.sessions.events.list(sid, { limit: 1000 })).data as any[];
    return evs.some((e) => e.type === 'session.status_idle' && e.seq > seq);
  }, 15_000);
  return t.model.requests.slice(before).at(-1)!.body;
}

const msg = (text: string) => ({
  type: 'agent.message',
  payload: { content: [{ type: 'text', text }] },
});
const seqs = (l: readonly { seq: number }[]) => l.map((e) => e.seq);

const userTexts = (body: any): string[] =>
  (body.messages as any[])
    .filter((m) => m.role === 'user')
    .flatMap((m) => (typeof m.content === 'string' ? [m.content] : m.content))
    .map((b: any) => (typeof b === 'string' ? b : b.text))
    .filter(Boolean);

describe('session log cache', () => {
  it('each turn sends the whole conversation, including events appended by someone else', async () => {
    const sid = await newSession();
    expect(userTexts(await turn(sid, 'one'))).toEqual(['one']);
    expect(userTexts(await turn(sid, 'two'))).toEqual(['one', 'two']);
    // Written by another EventLog over the same store, as a gateway in another process would:
    // no append hook of this process sees it, so the turn reads it from the store.
    const p = t.server.platform;
    await new EventLog(p.collections, p.coordination.pubsub).append(TENANT, sid, [
      { type: 'user.message', payload: { content: [{ type: 'text', text: 'aside' }] } },
    ]);
    const third = await turn(sid, 'three');
    expect(userTexts(third)).toEqual(['one', 'two', 'aside', 'three']);
    expect((third.messages as any[]).filter((m) => m.role === 'assistant')).toHaveLength(2);
  });

  it('input appended in this process is in the cache: the turn that consumes it reads no events', async () => {
    const sid = await newSession();
    expect(userTexts(await turn(sid, 'one'))).toEqual(['one']);
    const events = t.server.platform.events;
    const range = events.range;
    let reads = 0;
    events.range = (...a: Parameters<typeof range>) => {
      if (a[1] === sid) reads++;
      return range.apply(events, a);
    };
    try {
      const body = await turn(sid, 'two');
      expect(userTexts(body)).toEqual(['one', 'two']);
      expect(reads).toBe(0);
    } finally {
      events.range = range;
    }
  });

  it('serves what the store holds after every append; cached events are frozen', async () => {
    const sid = await newSession();
    const log = t.server.platform.events;
    const cache = new SessionLogCache(log);
    for (let i = 0; i < 5; i++) {
      await log.append(TENANT, sid, [
        { type: 'user.message', payload: { content: [{ type: 'text', text: `m${i}` }] } },
        { type: 'agent.message', payload: { content: [{ type: 'text', text: `a${i}` }] } },
      ]);
      const cached = await cache.all(TENANT, sid);
      expect(cached.map((e) => [e._id, e.seq])).toEqual(
        (await log.all(TENANT, sid)).map((e) => [e._id, e.seq]),
      );
    }
    const [first] = await cache.all(TENANT, sid);
    expect(() => {
      (first!.payload as any).content[0].text = 'changed';
    }).toThrow(TypeError);
    expect(((await cache.all(TENANT, sid))[0]!.payload as any).content[0].text).toBe('m0');
    expect(cache.stats().sessions).toBe(1);
    cache.forget(TENANT, sid);
    expect(cache.stats()).toEqual({ bytes: 0, sessions: 0 });
    expect(await cache.all(TENANT, sid)).toHaveLength(10);
  });

  it('holds at most its byte bound: a bigger log is served whole but not kept; LRU goes first', async () => {
    const log = t.server.platform.events;
    const [a, b, big] = [await newSession(), await newSession(), await newSession()];
    const fill = (sid: string, n: number, size: number) =>
      log.append(
        TENANT,
        sid,
        Array.from({ length: n }, () => ({
          type: 'agent.message',
          payload: { content: [{ type: 'text', text: 'x'.repeat(size) }] },
        })),
      );
    await fill(a, 4, 1000);
    await fill(b, 4, 1000);
    await fill(big, 20, 1000);
    const cache = new SessionLogCache(log, 10_000);
    expect(await cache.all(TENANT, big)).toHaveLength(20);
    expect(cache.stats()).toEqual({ bytes: 0, sessions: 0 });
    await cache.all(TENANT, a);
    await cache.all(TENANT, b);
    expect(cache.stats().sessions).toBe(2);
    expect(cache.stats().bytes).toBeLessThanOrEqual(10_000);
    await fill(a, 2, 1000); // a grows past what both fit in: b (least recently used) goes
    expect(await cache.all(TENANT, a)).toHaveLength(6);
    expect(cache.stats().sessions).toBe(1);
    expect(cache.stats().bytes).toBeLessThanOrEqual(10_000);
    expect(await cache.all(TENANT, b)).toHaveLength(4);
  });

  it("keeps the worker's own appends: a read through them needs no store read; a gap is read", async () => {
    const sid = await newSession();
    const log = t.server.platform.events;
    let reads = 0;
    const cache = new SessionLogCache({
      range: (...a: Parameters<typeof log.range>) => {
        reads++;
        return log.range(...a);
      },
    });
    await log.append(TENANT, sid, [msg('a')]);
    expect(await cache.all(TENANT, sid)).toHaveLength(1);
    expect(reads).toBe(1);
    const own = msg('b');
    const written = await log.append(TENANT, sid, [own, msg('c')]);
    cache.appended(TENANT, sid, written);
    const through = await cache.all(TENANT, sid, written.at(-1)!.seq);
    expect(reads).toBe(1);
    expect(through.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(through.map((e) => e._id)).toEqual((await log.all(TENANT, sid)).map((e) => e._id));
    // Kept copies are frozen; the appender's own payload objects are not.
    expect(Object.isFrozen(through[1]!.payload)).toBe(true);
    expect(Object.isFrozen(own.payload)).toBe(false);
    // Past the cached run, or without `through`, the store is read.
    await cache.all(TENANT, sid, 4);
    expect(reads).toBe(2);
    await cache.all(TENANT, sid);
    expect(reads).toBe(3);
    // An append that does not extend the cached run (someone else's came first) is not kept.
    await log.append(TENANT, sid, [msg('d')]);
    const mine = await log.append(TENANT, sid, [msg('e')]);
    cache.appended(TENANT, sid, mine);
    const after = await cache.all(TENANT, sid, mine[0]!.seq);
    expect(reads).toBe(4);
    expect(after.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(after.map((e) => (e.payload as any).content[0].text)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('an array it returned never changes; an own append delivered during a read is kept once', async () => {
    const sid = await newSession();
    const log = t.server.platform.events;
    let during: (() => void) | undefined;
    const cache = new SessionLogCache({
      range: async (...a: Parameters<typeof log.range>) => {
        const page = await log.range(...a);
        during?.();
        during = undefined;
        return page;
      },
    });
    await log.append(TENANT, sid, [msg('a')]);
    const first = await cache.all(TENANT, sid);
    for (const text of ['b', 'c', 'd'])
      cache.appended(TENANT, sid, await log.append(TENANT, sid, [msg(text)]));
    expect(seqs(first)).toEqual([1]);
    const second = await cache.all(TENANT, sid, 4);
    expect(seqs(second)).toEqual([1, 2, 3, 4]);
    // The worker's append (seq 5) is in the store; its `appended` arrives while a read is out.
    const own = await log.append(TENANT, sid, [msg('e')]);
    during = () => cache.appended(TENANT, sid, own);
    expect(seqs(await cache.all(TENANT, sid))).toEqual([1, 2, 3, 4, 5]);
    expect(seqs(second)).toEqual([1, 2, 3, 4]);
    expect(seqs(await cache.all(TENANT, sid))).toEqual([1, 2, 3, 4, 5]);
    expect(seqs(await cache.all(TENANT, sid, 5))).toEqual([1, 2, 3, 4, 5]);
  });
});
