/**
 * SSE fan-out (gateway/src/sse.ts, gateway/src/sessionStream.ts, core sharedSubscribe):
 * - live events published in one event-loop turn reach every subscriber in publish order, in
 *   ONE write per subscriber (one HTTP chunk, seen through a raw socket client); each stream
 *   gets the frames its own mode asks for (chunks, SDK previews, both) from the shared encodings;
 * - a subscriber that stops reading is cut once SSE_MAX_BUFFERED_BYTES are waiting for it, while
 *   a reading subscriber of the same session gets every frame, in order;
 * - a history replay larger than that bound goes at the client's pace instead (never cut), and
 *   the live events that arrived meanwhile follow it;
 * - the stream ends after `session.deleted`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, REAL, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { openRawSse, type RawSseStream } from './sseRawClient.js';

const MAX_BUFFERED = 256 * 1024;
let t: TestPlatform;
let envId: string;
let agentId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SSE_MAX_BUFFERED_BYTES: String(MAX_BUFFERED) } });
  envId = (await t.client.beta.environments.create({ name: 'fanout' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'fanout', model: 'claude-sonnet-4-5' })).id;
});
afterAll(async () => {
  await t?.close();
});

const newSession = async () =>
  (await t.client.beta.sessions.create({ agent: agentId, environment_id: envId })).id;
const open = (sid: string, query: string) =>
  openRawSse(t.url, `/v1/sessions/${sid}/events/stream?${query}`, { 'x-api-key': t.apiKey });
const chunk = (i: number, delta = `d${i}`) => ({
  type: 'agent.message_chunk',
  message_id: 'msg_fanout',
  delta,
  index: 0,
});
/** Open SSE streams of the platform, from its /metrics gauge. */
async function openStreamCount(): Promise<number> {
  const text = await (await t.http('/metrics')).text();
  const m = /^agentfleet_sse_streams (\d+)$/m.exec(text);
  if (!m) throw new Error('agentfleet_sse_streams missing from /metrics');
  return Number(m[1]);
}

describe('SSE fan-out', () => {
  it('events published in one tick: every subscriber gets them in order, in one write, in its own frame format', async () => {
    const sid = await newSession();
    const chunksOnly = await open(sid, 'include=chunks');
    const deltasOnly = await open(sid, 'event_deltas[]=agent.message');
    const both = await open(sid, 'include=chunks&event_deltas[]=agent.message');
    const streams = [chunksOnly, deltasOnly, both];
    try {
      const N = 20;
      const pubs: Array<Promise<void>> = [];
      for (let i = 0; i < N; i++) pubs.push(t.server.platform.events.publishLive(sid, chunk(i)));
      await Promise.all(pubs);
      await waitFor(async () =>
        streams.every((s) => s.frames().length >= (s === both ? 2 * N : N)),
      );
      const deltas = Array.from({ length: N }, (_, i) => `d${i}`);
      const a = chunksOnly.frames();
      expect(a.map((f) => f.event)).toEqual(Array(N).fill('agent.message_chunk'));
      expect(a.map((f) => f.data.delta)).toEqual(deltas);
      expect(a[0]!.data).toEqual({ ...chunk(0), session_id: sid });
      const b = deltasOnly.frames();
      expect(b.map((f) => f.event)).toEqual(Array(N).fill('event_delta'));
      expect(b.map((f) => f.data.delta.content.text)).toEqual(deltas);
      expect(b[0]!.data.event_id).toBe('msg_fanout');
      const c = both.frames();
      expect(c.map((f) => f.event)).toEqual(
        deltas.flatMap(() => ['agent.message_chunk', 'event_delta']),
      );
      expect(c.filter((f) => f.event === 'agent.message_chunk')).toEqual(a);
      expect(c.filter((f) => f.event === 'event_delta')).toEqual(b);
      // Embedded pub/sub delivers a tick's publishes within that tick: one write each. (Redis
      // may hand them over in several reads, so several writes can be right there.)
      if (!REAL) for (const s of streams) expect(s.chunks.length).toBe(1);
    } finally {
      for (const s of streams) s.socket.destroy();
    }
  });

  it('a subscriber that stops reading is cut past SSE_MAX_BUFFERED_BYTES; a reading one gets every frame in order', async () => {
    const sid = await newSession();
    const before = await openStreamCount();
    const slow: RawSseStream = await open(sid, 'include=chunks');
    slow.socket.pause(); // reads nothing more: the kernel buffers fill, then the server's queue
    const fast = await open(sid, 'include=chunks');
    expect(await openStreamCount()).toBe(before + 2);
    const big = 'x'.repeat(128 * 1024);
    let published = 0;
    let cut = false;
    try {
      // Publish until the slow stream is cut (bounded: 1024 × 128 KiB), waiting each time until
      // the reading subscriber has the event, so that one never falls behind.
      while (published < 1024) {
        const seen = new Promise<void>((resolve) => {
          fast.onChunk = () => {
            if (fast.chunks.at(-1)!.includes(`"delta":"${published}:`)) resolve();
          };
        });
        await t.server.platform.events.publishLive(sid, chunk(published, `${published}:${big}`));
        await seen;
        published++;
        if (published % 16 === 0 && (await openStreamCount()) === before + 1) {
          cut = true;
          break;
        }
      }
      expect(cut).toBe(true);
      const got = fast.frames().map((f) => Number(String(f.data.delta).split(':')[0]));
      expect(got).toEqual(Array.from({ length: published }, (_, i) => i));
      // The slow client finds its stream ended: what reached it is a prefix, in order.
      slow.socket.resume();
      await slow.closed;
      const partial = slow.chunks
        .join('')
        .split('\n\n')
        .filter((raw) => raw.includes('"delta":"'))
        .map((raw) => Number(/"delta":"(\d+):/.exec(raw)![1]));
      expect(partial.length).toBeLessThan(published);
      expect(partial).toEqual(Array.from({ length: partial.length }, (_, i) => i));
    } finally {
      slow.socket.destroy();
      fast.socket.destroy();
    }
  });

  it('a replay larger than SSE_MAX_BUFFERED_BYTES to a client that stops reading is paced, not cut; live events follow it', async () => {
    const sid = await newSession();
    const big = 'y'.repeat(200 * 1024);
    const N = 60; // 12 MB of history: far more than the bound and the kernel's socket buffers
    for (let i = 0; i < N; i += 10)
      await t.server.platform.events.append(
        'tnt_default',
        sid,
        Array.from({ length: 10 }, () => ({
          type: 'user.message',
          payload: { content: [{ type: 'text', text: big }] },
        })),
      );
    const before = await openStreamCount();
    const s = await open(sid, 'replay=1&include=chunks');
    try {
      // The replay's first bytes: the server has written it; the client stops reading.
      await new Promise<void>((resolve) => (s.onData = () => resolve()));
      s.socket.pause();
      await t.server.platform.events.publishLive(sid, chunk(0, 'live-after-replay'));
      // One request through the same server: the live event has reached the stream by now.
      expect(await openStreamCount()).toBe(before + 1);
      s.socket.resume();
      await waitFor(async () => s.frames().some((f) => f.event === 'agent.message_chunk'));
      const frames = s.frames();
      expect(frames.map((f) => f.id ?? f.event)).toEqual([
        ...Array.from({ length: N }, (_, i) => String(i + 1)),
        'agent.message_chunk',
      ]);
      expect(frames.at(-1)!.data.delta).toBe('live-after-replay');
      expect(await openStreamCount()).toBe(before + 1);
    } finally {
      s.socket.destroy();
    }
  });

  it('the stream ends after session.deleted', async () => {
    const sid = await newSession();
    const res = await t.http(`/v1/sessions/${sid}/events/stream`);
    expect(res.status).toBe(200);
    const frames = readSse(res, () => false); // reads until the server ends the stream
    const del = await t.http(`/v1/sessions/${sid}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const got = await frames;
    expect(got.map((f) => f.event)).toEqual(['session.status_terminated', 'session.deleted']);
  });
});
