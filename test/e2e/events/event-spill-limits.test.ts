/**
 * No event, however it was produced, makes a read of the session's events fail
 * (core/src/events/spill.ts, core/src/events/cap.ts), through the official SDK and
 * HTTP against an in-process platform. Events the API cannot write (a forged `_spilled`
 * reference, an oversized blob) are written here through the platform's own event log and
 * object store, as a bug or a tampered store would leave them:
 * - "capped at append": a 40 MiB agent.tool_result is stored capped under 32 MiB, its text
 *   ending with the truncation note and `payload_truncated: true`, and lists with 200;
 * - a reference to another session's blob (directly or through `..`) is never fetched: the event
 *   is served with `payload_unavailable_reason: 'outside_session'` and none of that blob;
 * - a blob over the ceiling, or missing, serves the event marked (`too_large`, `missing`);
 * - a page whose spilled payloads would total over 64 MiB is cut short with has_more, and the
 *   next page serves the rest.
 */
import { eventSpillPrefix } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let tenantId: string;
let c: any;
let apiKey: string;
let envId: string;
let agentId: string;
beforeAll(async () => {
  t = await startPlatform();
  ({ tenantId, client: c, apiKey } = await t.newTenant('spill-limits'));
  envId = (await c.beta.environments.create({ name: 'limits' })).id;
  agentId = (await c.beta.agents.create({ name: 'limits', model: 'claude-sonnet-4-5' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const MiB = 1024 * 1024;
const newSession = async () =>
  (await c.beta.sessions.create({ agent: agentId, environment_id: envId })).id as string;
const append = (sid: string, type: string, payload: Record<string, unknown>) =>
  t.server.platform.events.append(tenantId, sid, [{ type, payload }]);
async function listAll(sid: string): Promise<any[]> {
  const got: any[] = [];
  for await (const e of c.beta.sessions.events.list(sid)) got.push(e);
  return got;
}
const toolResult = (text: string) => ({
  tool_use_id: 'toolu_x',
  content: [{ type: 'text', text }],
  is_error: false,
});

describe('reads of events never fail', () => {
  it('capped at append: a 40 MiB tool result is stored under the ceiling, noted, and lists with 200', async () => {
    const sid = await newSession();
    const [ev] = await append(sid, 'agent.tool_result', toolResult('y'.repeat(40 * MiB)));
    const [blob] = await t.server.platform.objects.list(eventSpillPrefix(tenantId, sid));
    expect(blob!.size).toBeLessThanOrEqual(32 * MiB);
    const res = await t.http(`/v1/sessions/${sid}/events`, { key: apiKey });
    expect(res.status).toBe(200);
    const listed = await listAll(sid);
    const got = listed.find((e) => e.id === ev!._id);
    expect(got.payload_truncated).toBe(true);
    expect(got.tool_use_id).toBe('toolu_x');
    const text = got.content[0].text as string;
    expect(text.startsWith('yyyy')).toBe(true);
    expect(text).toMatch(/\[truncated by the platform: .* this text had 41943040 characters\]$/);
  }, 60_000);

  it("a forged reference to another session's blob is never served", async () => {
    const victim = await newSession();
    const SECRET = 'victim-secret-' + 'z'.repeat(600_000);
    await append(victim, 'agent.message', { content: [{ type: 'text', text: SECRET }] });
    const [stolen] = await t.server.platform.objects.list(eventSpillPrefix(tenantId, victim));
    expect(stolen).toBeDefined();
    const sid = await newSession();
    const own = eventSpillPrefix(tenantId, sid);
    const forged = [stolen!.key, `${own}../${victim}/${stolen!.key.split('/').at(-1)}`];
    for (const key of forged)
      await append(sid, 'agent.message', { _spilled: { key, bytes: stolen!.size } });
    const listed = await listAll(sid);
    expect(
      listed.map((e) => [e.type, e.payload_unavailable, e.payload_unavailable_reason]),
    ).toEqual([
      ['agent.message', true, 'outside_session'],
      ['agent.message', true, 'outside_session'],
    ]);
    const text = JSON.stringify(listed);
    expect(text).not.toContain('victim-secret');
    expect(text).not.toContain('_spilled');
  });

  it('a blob over the ceiling or missing serves the event marked, with 200', async () => {
    const sid = await newSession();
    const prefix = eventSpillPrefix(tenantId, sid);
    const huge = `${prefix}evt_huge-00000000.json`;
    await t.server.platform.objects.put(huge, Buffer.alloc(33 * MiB, 0x20));
    await append(sid, 'agent.tool_result', {
      tool_use_id: 'toolu_h',
      _spilled: { key: huge, bytes: 10 },
    });
    await append(sid, 'agent.message', {
      _spilled: { key: `${prefix}evt_gone-00000000.json`, bytes: 10 },
    });
    const res = await t.http(`/v1/sessions/${sid}/events`, { key: apiKey });
    expect(res.status).toBe(200);
    const listed = await listAll(sid);
    expect(listed.map((e) => [e.type, e.payload_unavailable_reason, e.tool_use_id])).toEqual([
      ['agent.tool_result', 'too_large', 'toolu_h'],
      ['agent.message', 'missing', undefined],
    ]);
  });

  it('a page of spilled payloads over 64 MiB is cut short; the next page serves the rest', async () => {
    const sid = await newSession();
    const ids: string[] = [];
    for (const ch of ['a', 'b', 'c'])
      ids.push((await append(sid, 'agent.tool_result', toolResult(ch.repeat(25 * MiB))))[0]!._id);
    const res = await t.http(`/v1/sessions/${sid}/events?limit=10`, { key: apiKey });
    expect(res.status).toBe(200);
    const first = (await res.json()) as any;
    expect(first.data.map((e: any) => e.id)).toEqual(ids.slice(0, 2));
    expect(first.has_more).toBe(true);
    const all = await listAll(sid);
    expect(all.map((e) => e.id)).toEqual(ids);
    expect(all.map((e) => (e.content[0].text as string).length)).toEqual([
      25 * MiB,
      25 * MiB,
      25 * MiB,
    ]);
  }, 120_000);
});
