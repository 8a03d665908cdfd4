/**
 * List filters as the SDKs send them: `created_at[gt|gte|lt|lte]` are RFC 3339 instants compared
 * as instants (core/src/api/pagination.ts createdAtBounds) for agents, sessions and session
 * events; a bad value is a 400 naming the parameter; session list accepts the SDK's
 * `deployment_id` (an unknown one matches nothing; runs' sessions: test/e2e/deployments/deployments.test.ts) and
 * `memory_store_id` (an unknown store matches nothing; sessions mounting a store:
 * test/e2e/memory/memory-session.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(() => t?.close());

const ids = (page: { data: { id: string }[] }) => page.data.map((x) => x.id);
const wholeSecond = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');

describe('created_at bounds', () => {
  it('agents: a bound at the whole second includes an agent created within it; offsets count', async () => {
    const a = await t.client.beta.agents.create({ name: 'lf', model: 'claude-sonnet-4-5' });
    const sec = wholeSecond(a.created_at);
    const q = (k: string, v: string) =>
      t.client.beta.agents.list({ [k]: v, limit: 100 } as Record<string, string>);
    expect(ids(await q('created_at[gte]', sec))).toContain(a.id);
    // The same instant written with an offset: the +01:00 wall clock is UTC + 1 h.
    const plus1 = new Date(Date.parse(sec) + 3_600_000).toISOString().replace(/\.000Z$/, '+01:00');
    expect(ids(await q('created_at[gte]', plus1))).toContain(a.id);
    const later = new Date(Date.parse(a.created_at) + 1).toISOString();
    expect(ids(await q('created_at[gte]', later))).not.toContain(a.id);
    expect(ids(await q('created_at[lte]', sec))).not.toContain(a.id);
    expect(ids(await q('created_at[lte]', a.created_at))).toContain(a.id);
  });

  it('sessions and events: gt/lt compare as instants', async () => {
    const env = await t.client.beta.environments.create({ name: 'lf' });
    const agent = await t.client.beta.agents.create({ name: 'lf', model: 'claude-sonnet-4-5' });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const before = new Date(Date.parse(s.created_at) - 1).toISOString();
    const got = await t.client.beta.sessions.list({ 'created_at[gt]': before, limit: 100 });
    expect(ids(got)).toContain(s.id);
    const none = await t.client.beta.sessions.list({ 'created_at[lt]': before, limit: 100 });
    expect(ids(none)).not.toContain(s.id);
    const ev = await t.http(
      `/v1/sessions/${s.id}/events?${new URLSearchParams({ 'created_at[gte]': wholeSecond(s.created_at) })}`,
    );
    expect(ev.status).toBe(200);
  });

  it('a value that is not an RFC 3339 date-time is a 400 naming the parameter', async () => {
    for (const path of ['/v1/agents', '/v1/sessions']) {
      for (const v of ['notadate', '2026-04-01', '1712000000', '2026-13-01T00:00:00Z']) {
        const res = await t.http(`${path}?${new URLSearchParams({ 'created_at[gte]': v })}`);
        expect(res.status, `${path} ${v}`).toBe(400);
        const body = (await res.json()) as any;
        expect(body.type).toBe('error');
        expect(body.error.message).toContain('created_at[gte]');
      }
    }
  });
});

describe('session list: the SDK filters', () => {
  it('an unknown deployment_id and an unknown memory_store_id match nothing', async () => {
    const env = await t.client.beta.environments.create({ name: 'lf2' });
    const agent = await t.client.beta.agents.create({ name: 'lf2', model: 'claude-sonnet-4-5' });
    await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    expect((await t.client.beta.sessions.list({ limit: 100 })).data.length).toBeGreaterThan(0);
    expect((await t.client.beta.sessions.list({ deployment_id: 'dep_x' })).data).toEqual([]);
    expect((await t.client.beta.sessions.list({ memory_store_id: 'mem_x' })).data).toEqual([]);
  });
});
