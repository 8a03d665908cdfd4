/**
 * Event spill (spec: events over 500 KB go to the object store with an `_spilled` reference;
 * core/src/events/spill.ts). A 600 KB user.message:
 * - is stored as a reference whose blob exists, while small events stay inline;
 * - is served whole, never showing `_spilled`, by the send answer, the events list (official
 *   TypeScript SDK), the live SSE stream, the SSE replay, GraphQL, and the model's history;
 * - an append that is refused leaves no blob behind;
 * - session delete removes the spilled blobs.
 */
import { eventSpillPrefix } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

const BIG = 'x'.repeat(300_000) + 'é'.repeat(150_000); // 600 KB of UTF-8, 450 000 characters
const bigMessage = [{ type: 'text' as const, text: BIG }];

describe('events over 500 KB spill to the object store', () => {
  it('stores a reference, serves the event whole everywhere, and deletes the blob with the session', async () => {
    const { tenantId, client: c, apiKey } = await t.newTenant('spill');
    const { collections, objects } = t.server.platform;
    const env = await c.beta.environments.create({ name: 'spill' });
    const agent = await c.beta.agents.create({ name: 'spill', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    t.model.script('claude-sonnet-4-5', { steps: [{ text: 'got it' }] });

    const live = await c.beta.sessions.events.stream(s.id);
    const sent = await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: bigMessage }],
    });
    const answered = (sent as any).data[0];
    expect(answered.content).toEqual(bigMessage);

    // Live delivery: the whole event, as the SDK parses it.
    let liveMsg: any = null;
    for await (const ev of live) {
      if (ev.type === 'user.message') liveMsg = ev;
      if (ev.type === 'session.status_idle') break;
    }
    expect(liveMsg.content).toEqual(bigMessage);
    expect(JSON.stringify(liveMsg)).not.toContain('_spilled');

    // Stored: a reference to a blob that exists; the small events stay inline.
    const stored = await collections.events.find(tenantId, { session_id: s.id });
    const doc = stored.find((e) => e.type === 'user.message')!;
    expect(doc._id).toBe(answered.id);
    const ref = doc.payload._spilled as { key: string; bytes: number };
    expect(ref.key.startsWith(eventSpillPrefix(tenantId, s.id))).toBe(true);
    expect(ref.bytes).toBe(Buffer.byteLength(JSON.stringify({ content: bigMessage })));
    expect(doc.payload.content).toBeUndefined();
    expect(JSON.parse(Buffer.from((await objects.get(ref.key))!).toString()).content).toEqual(
      bigMessage,
    );
    expect(stored.filter((e) => '_spilled' in e.payload).map((e) => e._id)).toEqual([doc._id]);

    // The model saw the whole message (the turn runner's history reads it back).
    const request = t.model.requests.at(-1)!;
    expect(request.body.messages[0].content[0].text).toBe(BIG);

    // Events list through the SDK.
    const listed: any[] = [];
    for await (const e of c.beta.sessions.events.list(s.id)) listed.push(e);
    expect(listed.find((e) => e.id === doc._id).content).toEqual(bigMessage);
    expect(JSON.stringify(listed)).not.toContain('_spilled');

    // SSE replay.
    const replay = await t.http(`/v1/sessions/${s.id}/events/stream?replay=1`, { key: apiKey });
    const frames = await readSse(replay, (f) => f.event === 'session.status_idle');
    const replayed = frames.find((f) => f.event === 'user.message')!;
    expect(replayed.data.content).toEqual(bigMessage);
    expect(replayed.data.data.content).toEqual(bigMessage);
    expect(JSON.stringify(frames)).not.toContain('_spilled');

    // GraphQL.
    const gql = await t.http('/graphql', {
      method: 'POST',
      key: apiKey,
      json: {
        query: `query($s: ID!) { sessionEvents(sessionId: $s, limit: 100) { nodes { id type data } } }`,
        variables: { s: s.id },
      },
    });
    const nodes = ((await gql.json()) as any).data.sessionEvents.nodes as any[];
    expect(nodes.find((n) => n.id === doc._id).data.content).toEqual(bigMessage);
    expect(JSON.stringify(nodes)).not.toContain('_spilled');

    // Delete removes the blob.
    await c.beta.sessions.delete(s.id);
    expect(await objects.list(eventSpillPrefix(tenantId, s.id))).toEqual([]);
    expect(await objects.get(ref.key)).toBeNull();
  }, 60_000);

  it('an append that is refused leaves no blob behind', async () => {
    const { tenantId, client: c } = await t.newTenant('spill-refused');
    const { events, objects, collections } = t.server.platform;
    const env = await c.beta.environments.create({ name: 'spill' });
    const agent = await c.beta.agents.create({ name: 'spill', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await collections.sessions.updateOne(tenantId, { _id: s.id }, { $set: { fence: 5 } });
    // A writer whose lease was superseded: refused after its blob was written.
    const refused = await events
      .append(tenantId, s.id, [{ type: 'agent.message', payload: { content: bigMessage } }], {
        fence: 4,
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String(refused)).toMatch(/superseded/);
    expect(await objects.list(eventSpillPrefix(tenantId, s.id))).toEqual([]);
    expect(await collections.events.find(tenantId, { session_id: s.id })).toEqual([]);
    // The same append with the current fence spills and is served whole.
    const [ok] = await events.append(
      tenantId,
      s.id,
      [{ type: 'agent.message', payload: { content: bigMessage } }],
      { fence: 5 },
    );
    expect((await objects.list(eventSpillPrefix(tenantId, s.id))).length).toBe(1);
    const listed = await waitFor(async () => {
      const got: any[] = [];
      for await (const e of c.beta.sessions.events.list(s.id)) got.push(e);
      return got.length ? got : null;
    });
    expect(listed.map((e) => e.id)).toEqual([ok!._id]);
    expect(listed[0].content).toEqual(bigMessage);

    // Its blob lost out of band: the list still answers, the event marked, never a 5xx.
    for (const o of await objects.list(eventSpillPrefix(tenantId, s.id)))
      await objects.delete(o.key);
    const after: any[] = [];
    for await (const e of c.beta.sessions.events.list(s.id)) after.push(e);
    expect(after.map((e) => [e.id, e.type, e.payload_unavailable])).toEqual([
      [ok!._id, 'agent.message', true],
    ]);
  }, 60_000);
});
