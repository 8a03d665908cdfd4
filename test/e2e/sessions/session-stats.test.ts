/**
 * The session's SDK `stats` (core/src/sessions/status.ts renderStats, the turn's running time
 * added at its idle in workers/src/turn/finish.ts): `active_seconds` is 0 before any turn and
 * then the sum of the finished turns' running time (a turn held by a slow model answer counts
 * at least that long, and idle time between turns does not count); `duration_seconds` runs
 * from creation. Parsed by the TypeScript SDK.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, untilIdle } from '../../kit/turnHelpers.js';

const MODEL = 'stats-model';
let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform();
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const message = (text: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text }],
});

it('active_seconds sums the turns, duration_seconds runs from creation', async () => {
  const env = await t.client.beta.environments.create({ name: 'stats' });
  const agent = await t.client.beta.agents.create({ name: 'stats', model: MODEL });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  const fresh = await t.client.beta.sessions.retrieve(sid);
  expect(fresh.stats.active_seconds).toBe(0);
  expect(fresh.stats.duration_seconds).toBeGreaterThanOrEqual(0);

  t.model.script(MODEL, { steps: [{ delay_ms: 700 }, { text: 'one' }] });
  await untilIdle(t.client, sid, [message('first')]);
  const one = (await t.client.beta.sessions.retrieve(sid)).stats;
  expect(one.active_seconds).toBeGreaterThanOrEqual(0.7);
  expect(one.active_seconds).toBeLessThan(5);

  // Idle time between turns is not active time.
  await new Promise((r) => setTimeout(r, 1_000));
  t.model.script(MODEL, { steps: [{ delay_ms: 300 }, { text: 'two' }] });
  await untilIdle(t.client, sid, [message('second')]);
  const two = (await t.client.beta.sessions.retrieve(sid)).stats;
  expect(two.active_seconds! - one.active_seconds!).toBeGreaterThanOrEqual(0.3);
  expect(two.active_seconds! - one.active_seconds!).toBeLessThan(1);
  expect(two.duration_seconds! - two.active_seconds!).toBeGreaterThanOrEqual(1);
  expect(two.duration_seconds).toBeGreaterThan(one.duration_seconds!);
}, 60_000);
