/**
 * The pending-message queue (spec extension events `system.user_message_pending`, `_promoted`,
 * `_cancelled`; core/src/sessions/pendingQueue.ts, workers/src/turn/pending.ts):
 * - messages sent while a turn runs (held by a scripted answer with a `delay_ms` step) each get
 *   a pending marker right after them, then one promoted marker after the next turn's
 *   session.status_running, in send order; that turn's model request holds them in order; the
 *   send answers only the request's own events;
 * - an interrupt cancels the messages queued before it, in order: no turn takes them and no
 *   later turn's model request holds them;
 * - the markers are extension events: absent from the default SSE stream, present with
 *   `?include=chunks` (and they match their served schema, validateSessionEvent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSessionEvent } from '@agentfleet/schemas';
import { readSse, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, userMessage } from '../../kit/turnHelpers.js';

const MODEL = 'pending-queue-model';
const QUEUE = /^system\.user_message_(pending|promoted|cancelled)$/;
let t: TestPlatform;
let envId: string;
let agentId: string;

beforeAll(async () => {
  t = await startPlatform();
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'pending-queue' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'pending-queue', model: MODEL })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const newSession = async () =>
  (await t.client.beta.sessions.create({ agent: agentId, environment_id: envId })).id;
const send = async (sid: string, events: any[]) =>
  (await t.client.beta.sessions.events.send(sid, { events })).data as any[];
const allEvents = async (sid: string) =>
  ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[];
const requests = () => t.model.requests.filter((r) => r.model === MODEL);
const texts = (m: any) => m.content.map((b: any) => b.text).join('|');
const about = (events: any[], type: string) =>
  events.filter((e) => e.type === `system.user_message_${type}`);
/** The session's history replayed over SSE, through its event `lastSeq`. */
async function replayed(sid: string, query: string, lastSeq: number) {
  const res = await t.http(`/v1/sessions/${sid}/events/stream?replay=1${query}`);
  const ac = new AbortController();
  const frames = await readSse(res, (f) => f.data?.seq === lastSeq).finally(() => ac.abort());
  await res.body?.cancel().catch(() => {});
  return frames.map((f) => f.data).filter((d) => d?.seq !== undefined);
}

describe('pending-message queue', () => {
  it('messages sent during a turn: pending, then promoted by the next turn, in order', async () => {
    const sid = await newSession();
    t.model.script(
      MODEL,
      { steps: [{ delay_ms: 2000 }, { text: 'r0' }] },
      { steps: [{ text: 'r1' }] },
    );
    const before = requests().length;
    const [m0] = await send(sid, [userMessage('m0')]);
    await waitFor(async () => requests().length > before);
    const sent = [];
    for (const text of ['m1', 'm2', 'm3']) {
      const answer = await send(sid, [userMessage(text)]);
      expect(answer.map((e) => e.type)).toEqual(['user.message']);
      sent.push(answer[0]);
    }
    const events = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 2 ? ev : null;
    }, 30_000);
    const ids = sent.map((m) => m.id);
    const seqOf = (id: string) => events.find((e) => e.id === id)!.seq;
    const pending = about(events, 'pending');
    expect(pending.map((e) => e.user_message_id)).toEqual(ids);
    // Each marker right after its message (one send, one append).
    for (const p of pending) expect(p.seq).toBe(seqOf(p.user_message_id) + 1);
    expect(pending.some((e) => e.user_message_id === m0.id)).toBe(false);
    const promoted = about(events, 'promoted');
    expect(promoted.map((e) => e.user_message_id)).toEqual(ids);
    const running = events.filter((e) => e.type === 'session.status_running');
    expect(running).toHaveLength(2);
    for (const p of promoted) expect(p.seq).toBeGreaterThan(running[1].seq);
    expect(about(events, 'cancelled')).toEqual([]);
    for (const e of events.filter((x) => QUEUE.test(x.type))) validateSessionEvent(e);

    const mine = requests().slice(before);
    expect(mine).toHaveLength(2);
    expect(mine[1]!.body.messages.map(texts)).toEqual(['m0', 'r0', 'm1|m2|m3']);

    const lastSeq = events.at(-1).seq;
    const plain = await replayed(sid, '', lastSeq);
    expect(plain.filter((e) => QUEUE.test(e.type))).toEqual([]);
    expect(plain.some((e) => e.type === 'user.message')).toBe(true);
    const withChunks = await replayed(sid, '&include=chunks', lastSeq);
    expect(
      withChunks.filter((e) => QUEUE.test(e.type)).map((e) => [e.type, e.user_message_id]),
    ).toEqual([
      ...ids.map((id) => ['system.user_message_pending', id]),
      ...ids.map((id) => ['system.user_message_promoted', id]),
    ]);
  }, 60_000);

  it('an interrupt cancels the queued messages: no turn takes them, later turns never see them', async () => {
    const sid = await newSession();
    t.model.script(
      MODEL,
      { steps: [{ delay_ms: 5000 }, { text: 'never' }] },
      { steps: [{ text: 'r4' }] },
    );
    const before = requests().length;
    await send(sid, [userMessage('m0')]);
    await waitFor(async () => requests().length > before);
    const queued = [
      ...(await send(sid, [userMessage('m1')])),
      ...(await send(sid, [userMessage('m2')])),
    ];
    const [interrupt] = await send(sid, [{ type: 'user.interrupt' }]);
    const events = await waitFor(async () => {
      const ev = await allEvents(sid);
      return about(ev, 'cancelled').length >= 2 ? ev : null;
    }, 30_000);
    const cancelled = about(events, 'cancelled');
    expect(cancelled.map((e) => e.user_message_id)).toEqual(queued.map((m) => m.id));
    for (const c of cancelled) expect(c.seq).toBeGreaterThan(interrupt.seq);
    expect(about(events, 'promoted')).toEqual([]);
    for (const e of cancelled) validateSessionEvent(e);
    // No turn starts for them.
    await new Promise((r) => setTimeout(r, 500));
    expect(requests().length - before).toBe(1);
    expect((await allEvents(sid)).filter((e) => e.type === 'session.status_running')).toHaveLength(
      1,
    );

    // The next message's turn does not see them either.
    const [m4] = await send(sid, [userMessage('m4')]);
    const after = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 2 ? ev : null;
    }, 30_000);
    expect(about(after, 'pending').map((e) => e.user_message_id)).toEqual(queued.map((m) => m.id));
    expect(about(after, 'pending').some((e) => e.user_message_id === m4.id)).toBe(false);
    const mine = requests().slice(before);
    expect(mine).toHaveLength(2);
    const sentTexts = mine[1]!.body.messages.map(texts).join('|');
    expect(sentTexts).toContain('m4');
    expect(sentTexts).not.toMatch(/\bm[12]\b/);
    expect(after.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text)).toEqual([
      'r4',
    ]);
  }, 60_000);
});
