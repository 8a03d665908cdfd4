/**
 * One budget for a coordinator session (workers/src/turn/budget.ts, core/src/threads): a child
 * thread's model usage counts against the session's `max_list_cost` like the coordinator's own.
 * The coordinator starts a thread whose one answer costs more than the whole budget; when the
 * reply is delivered the coordinator's next model request is not made and the session ends
 * idle with `budget_reached`; the session's `usage` and `list_cost` are the threads' summed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, userMessage } from '../../kit/turnHelpers.js';

const COORD = 'threads-budget-coordinator';
const WORKER = 'threads-budget-worker';
// USD per million tokens: the worker's answer (1000 input + 500 output) costs $2.00.
const COST = { input: 1000, output: 2000, cacheRead: 100, cacheWrite: 1250 };
let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  for (const m of [COORD, WORKER]) await addModelCard(t, m, { piConfig: { cost: COST } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const allEvents = async (sid: string) =>
  ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[];

describe('a coordinator session budget', () => {
  it("stops the coordinator once a thread's usage spent it", async () => {
    const env = await t.client.beta.environments.create({ name: 'threads-budget' });
    const worker = await t.client.beta.agents.create({ name: 'spender', model: WORKER });
    const lead = await t.client.beta.agents.create({
      name: 'lead',
      model: COORD,
      multiagent: { type: 'coordinator', agents: [worker.id] },
    });
    const s = await t.client.beta.sessions.create({
      agent: lead.id,
      environment_id: env.id,
      budget: { type: 'limit', max_list_cost: { amount: '100', currency: 'USD' } },
    });
    t.model.script(
      COORD,
      {
        steps: [
          { tool_use: { name: 'start_thread', input: { agent_name: 'spender', task: 'go' } } },
        ],
        usage: { input_tokens: 1, output_tokens: 1 },
      },
      { steps: [{ text: 'waiting' }], usage: { input_tokens: 1, output_tokens: 1 } },
      { steps: [{ text: 'never asked' }] },
    );
    t.model.script(WORKER, {
      steps: [{ text: 'spent it all' }],
      usage: { input_tokens: 1000, output_tokens: 500 },
    });
    await t.client.beta.sessions.events.send(s.id, { events: [userMessage('spend')] });
    const events = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
    }, 60_000);
    const idle = events.find((e) => e.type === 'session.status_idle');
    expect(idle.stop_reason).toEqual({ type: 'budget_reached' });
    // The reply was delivered, then the coordinator was not asked again.
    expect(events.some((e) => e.type === 'agent.thread_message_received')).toBe(true);
    const coordCalls = t.model.requests.filter((r) => r.model === COORD);
    expect(coordCalls).toHaveLength(2);
    const after = await t.client.beta.sessions.retrieve(s.id);
    expect(after.usage.input_tokens).toBe(1002);
    expect(after.usage.output_tokens).toBe(502);
    expect(Number(after.usage.list_cost!.amount)).toBeGreaterThanOrEqual(200);
    // A thread's own usage is its own.
    const threads = (await t.client.beta.sessions.threads.list(s.id)).data;
    expect(threads[1]!.usage!.input_tokens).toBe(1000);
    expect(threads[0]!.usage!.input_tokens).toBe(2);
  }, 90_000);
});
