/**
 * A session's tracked list cost survives kill -9 of the all-in-one process mid-turn without
 * double counting (workers/src/turn/budget.ts): the finished request's cost was stored with its
 * events, the interrupted request added nothing, and the recovered turn adds only the request
 * it makes itself. The list cost stays consistent with the token counts.
 */
import { describe, expect, it } from 'vitest';
import { kill9 } from '../../kit/process.js';
import { crashPlatform, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-budget-crash-');

const MODEL = 'budget-crash-model';
// 1000 input + 500 output tokens at $1000 / $2000 per Mtok: $2.00 (200 cents) per request.
const USAGE = { input_tokens: 1000, output_tokens: 500 };

describe('budget across a crash', () => {
  it('a recovered turn does not count the finished request twice', async () => {
    const c = await crashPlatform(fx, 'budget-crash');
    const call = c.call;
    let proc = await c.start();
    try {
      await c.addCard(MODEL, { pi_config: { cost: { input: 1000, output: 2000 } } });
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (
        await call('/v1/agents', {
          name: 'a',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        })
      ).body.id;
      const created = await call('/v1/sessions', {
        agent: agentId,
        environment_id: envId,
        budget: { type: 'limit', max_list_cost: { amount: '1000', currency: 'USD' } },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const sid = created.body.id;
      fx.model.script(
        MODEL,
        { steps: [{ tool_use: { name: 'bash', input: { command: 'true' } } }], usage: USAGE },
        { steps: [{ text: 'partial' }, { delay_ms: 60_000 }], usage: USAGE },
        { steps: [{ text: 'finished after recovery' }], usage: USAGE },
      );
      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
      });
      expect(sent.status).toBe(202);
      // The first request (a tool call) is stored with its cost; the second is mid-stream.
      await waitFor(async () => fx.model.requests.filter((r) => r.model === MODEL).length >= 2);
      expect((await call(`/v1/sessions/${sid}`)).body.usage.list_cost).toEqual({
        amount: '200',
        currency: 'USD',
      });
      await kill9(proc.child);

      proc = await c.start();
      const events = await sessionEvents(call).firstIdle(sid);
      expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'finished after recovery',
      );
      expect(fx.model.requests.filter((r) => r.model === MODEL)).toHaveLength(3);
      const after = (await call(`/v1/sessions/${sid}`)).body;
      // Two finished requests: the first and the recovered one; the interrupted one added nothing.
      expect(after.usage.input_tokens).toBe(2000);
      expect(after.usage.list_cost).toEqual({ amount: '400', currency: 'USD' });
    } finally {
      await kill9(proc.child);
    }
  }, 90_000);
});
