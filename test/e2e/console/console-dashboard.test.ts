/**
 * The console dashboard's GraphQL `dashboard` query (core/src/console/dashboard.ts): live
 * counts with archived agents excluded, the running count, and the tenant's newest session
 * errors recorded as they are appended (a model that refuses the request); another tenant's
 * dashboard sees none of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

const MODEL = 'dashboard-model';
let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(() => t?.close());

const QUERY = `{ dashboard { agents environments sessions runningSessions
  recentErrors { sessionId seq type message createdAt } } }`;
async function dashboard(key: string) {
  const res = await t.http('/graphql', { method: 'POST', key, json: { query: QUERY } });
  const body = (await res.json()) as { data?: { dashboard: any }; errors?: unknown };
  expect(body.errors).toBeUndefined();
  return body.data!.dashboard;
}

describe('console dashboard', () => {
  it('counts, running sessions and the newest session errors, per tenant', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'dash-env' });
    const agent = await c.beta.agents.create({ name: 'dash', model: MODEL });
    const gone = await c.beta.agents.create({ name: 'dash-archived', model: MODEL });
    await c.beta.agents.archive(gone.id);
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    expect(await dashboard(t.operatorKey)).toMatchObject({
      agents: 1,
      environments: 1,
      sessions: 2,
      runningSessions: 0,
      recentErrors: [],
    });

    t.model.script(MODEL, {
      steps: [
        { http_error: { status: 400, type: 'invalid_request_error', message: 'bad prompt' } },
      ],
    });
    await t.http(`/v1/sessions/${s.id}/events`, {
      method: 'POST',
      headers: BETA,
      json: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'x' }] }] },
    });
    let d: any;
    for (let i = 0; i < 200; i++) {
      d = await dashboard(t.operatorKey);
      if (d.recentErrors.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(d.recentErrors).toHaveLength(1);
    expect(d.recentErrors[0]).toMatchObject({
      sessionId: s.id,
      type: 'model_request_failed_error',
    });
    expect(d.recentErrors[0].message).toContain('bad prompt');

    // A turn in flight counts as running.
    t.model.script(MODEL, { steps: [{ delay_ms: 1500 }, { text: 'done' }] });
    await t.http(`/v1/sessions/${s.id}/events`, {
      method: 'POST',
      headers: BETA,
      json: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'y' }] }] },
    });
    let running = 0;
    for (let i = 0; i < 40 && running === 0; i++) {
      running = (await dashboard(t.operatorKey)).runningSessions;
      if (!running) await new Promise((r) => setTimeout(r, 25));
    }
    expect(running).toBe(1);

    const other = await t.newTenant('dash-other');
    expect(await dashboard(other.apiKey)).toMatchObject({
      agents: 0,
      environments: 0,
      sessions: 0,
      recentErrors: [],
    });
  });
});
