/**
 * Session budgets through the official TypeScript SDK and HTTP (core/src/sessions/budget.ts,
 * core/src/models/prices.ts, workers/src/turn/budget.ts): each model request's usage × the card's
 * `pi_config.cost` (or the platform list price) accumulates into `usage.list_cost`; once it
 * reaches `max_list_cost` the turn ends with `budget_reached` and no model request is made
 * until the budget is raised or removed; the SDK's update rules (`budget_create_only`,
 * `budget_not_raised`, `model_not_budgetable`) are 400s with `details.error_code`; a model with
 * no list price cannot be budgeted and unpriced usage stops a budgeted session.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
const PRICED = 'budget-priced';
const PRICED_OAI = 'budget-priced-oai';
const UNPRICED = 'budget-unpriced';
const VOLATILE = 'budget-volatile';
const VENDOR = 'claude-sonnet-4-5'; // served by the fallback vendor key, priced from the list
// USD per million tokens: 1000 input + 500 output tokens cost $2.00 (200 cents).
const COST = { input: 1000, output: 2000, cacheRead: 100, cacheWrite: 1250 };
const USAGE = { input_tokens: 1000, output_tokens: 500 };
const cents = (amount: string) => ({
  type: 'limit' as const,
  max_list_cost: { amount, currency: 'USD' as const },
});
const cardIds: Record<string, string> = {};

async function card(
  modelId: string,
  provider: string,
  piConfig?: Record<string, unknown>,
  wireModel = modelId,
) {
  cardIds[modelId] = await addModelCard(t, modelId, {
    provider: provider as 'anthropic' | 'openai',
    model: wireModel,
    apiKey: 'sk-budget',
    piConfig,
  });
}

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  await card(PRICED, 'anthropic', { cost: COST });
  await card(PRICED_OAI, 'openai', { cost: COST });
  await card(UNPRICED, 'anthropic');
  await card(VOLATILE, 'anthropic', { cost: COST });
  envId = (await t.client.beta.environments.create({ name: 'budget-env' })).id;
});
afterAll(async () => {
  await t?.close();
});

const agentOn = async (model: string) =>
  (
    await t.client.beta.agents.create({
      name: `budget-${model}`,
      model,
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;

async function events(sid: string) {
  const all: any[] = [];
  for await (const e of t.client.beta.sessions.events.list(sid)) all.push(e);
  return all;
}

/** Sends one user message and waits for the session.status_idle that ends its turn. */
async function turn(sid: string, text: string) {
  const idles = (await events(sid)).filter((e) => e.type === 'session.status_idle').length;
  await t.client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
  });
  const after = await waitFor(async () => {
    const all = await events(sid);
    return all.filter((e) => e.type === 'session.status_idle').length > idles && all;
  });
  return { idle: after.filter((e) => e.type === 'session.status_idle').at(-1), all: after };
}

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    return err as InstanceType<typeof Anthropic.APIError> & { error: any };
  }
  throw new Error('expected a 400');
}

const requestsFor = (model: string) => t.model.requests.filter((r) => r.model === model).length;

describe('session budget', () => {
  it('stops the turn with budget_reached after the request that crosses it; raising it lets the session continue', async () => {
    const c = t.client;
    const s = await c.beta.sessions.create({
      agent: await agentOn(PRICED),
      environment_id: envId,
      budget: cents('300'),
    });
    expect(s.budget).toEqual(cents('300'));
    expect((s.usage as any).list_cost).toEqual({ amount: '0', currency: 'USD' });

    t.model.script(PRICED, { steps: [{ text: 'first' }], usage: USAGE });
    expect((await turn(s.id, 'one')).idle.stop_reason).toEqual({ type: 'end_turn' });
    expect((await c.beta.sessions.retrieve(s.id)).usage.list_cost).toEqual({
      amount: '200',
      currency: 'USD',
    });

    // This request brings the cost to 400 ≥ 300: its tool call runs, then no request follows.
    t.model.script(
      PRICED,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'true' } } }], usage: USAGE },
      { steps: [{ text: 'after the raise' }], usage: USAGE },
    );
    const before = requestsFor(PRICED);
    const crossed = await turn(s.id, 'two');
    expect(crossed.idle.stop_reason).toEqual({ type: 'budget_reached' });
    expect(requestsFor(PRICED)).toBe(before + 1);
    const lastResult = crossed.all.map((e) => e.type).lastIndexOf('agent.tool_result');
    expect(lastResult).toBeGreaterThan(0);
    expect(crossed.all.slice(lastResult + 1).map((e) => e.type)).toEqual(['session.status_idle']);
    const spent = await c.beta.sessions.retrieve(s.id);
    expect(spent.usage.list_cost).toEqual({ amount: '400', currency: 'USD' });
    expect(spent.usage.input_tokens).toBe(2000);

    // A new message ends at once: no model request while the budget is reached.
    expect((await turn(s.id, 'three')).idle.stop_reason).toEqual({ type: 'budget_reached' });
    expect(requestsFor(PRICED)).toBe(before + 1);

    // Raising to the consumed cost is not a raise; above it is, and the next turn runs.
    const same = await failure(c.beta.sessions.update(s.id, { budget: cents('400') }));
    expect(same.errorCode).toBe('budget_not_raised');
    expect(same.error.error.details).toMatchObject({
      field: 'budget',
      reason: 'budget_not_raised',
    });
    const raised = await c.beta.sessions.update(s.id, { budget: cents('1000') });
    expect(raised.budget).toEqual(cents('1000'));
    const updated = (await events(s.id)).filter((e) => e.type === 'session.updated').at(-1);
    expect(updated.budget).toEqual(cents('1000'));
    const resumed = await turn(s.id, 'four');
    expect(resumed.idle.stop_reason).toEqual({ type: 'end_turn' });
    expect(resumed.all.filter((e) => e.type === 'agent.message').at(-1).content).toEqual([
      { type: 'text', text: 'after the raise' },
    ]);
    expect((await c.beta.sessions.retrieve(s.id)).usage.list_cost?.amount).toBe('600');
  });

  it('usage in the log but not in the session counts (a crash between the two writes) is added once, before the next request', async () => {
    const c = t.client;
    const s = await c.beta.sessions.create({
      agent: await agentOn(PRICED),
      environment_id: envId,
      budget: cents('300'),
    });
    // Fault injection: a finished request's span end appended without its session update, as a
    // worker killed between the event insert and the usage update leaves it.
    await t.server.platform.events.append('tnt_default', s.id, [
      {
        type: 'span.model_request_end',
        payload: {
          model_request_start_id: 'sevt_lost',
          is_error: false,
          model_usage: {
            input_tokens: 1000,
            output_tokens: 1000,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0,
          },
          stop_reason: 'end_turn',
        },
      },
    ]);
    expect((await c.beta.sessions.retrieve(s.id)).usage.list_cost?.amount).toBe('0');
    const before = requestsFor(PRICED);
    // $1 + $2 = 300 cents: the budget is reached before any request is made.
    expect((await turn(s.id, 'go')).idle.stop_reason).toEqual({ type: 'budget_reached' });
    expect(requestsFor(PRICED)).toBe(before);
    expect((await turn(s.id, 'again')).idle.stop_reason).toEqual({ type: 'budget_reached' });
    const got = await c.beta.sessions.retrieve(s.id);
    expect(got.usage.input_tokens).toBe(1000);
    expect(got.usage.output_tokens).toBe(1000);
    expect(got.usage.list_cost?.amount).toBe('300');
  });

  it('prices all four token kinds from the platform list (vendor key) and from pi_config over OpenAI', async () => {
    const c = t.client;
    const vendor = await c.beta.sessions.create({
      agent: await agentOn(VENDOR),
      environment_id: envId,
      budget: cents('100000'),
    });
    // claude-sonnet-4-5 list: $3 input, $15 output, $0.30 cache read, $3.75 cache write per Mtok.
    t.model.script(VENDOR, {
      steps: [{ text: 'priced' }],
      usage: {
        input_tokens: 1_000_000,
        output_tokens: 1_000,
        cache_read_input_tokens: 1_000_000,
        cache_creation_input_tokens: 1_000_000,
      },
    });
    await turn(vendor.id, 'go');
    // 300 + 1.5 + 30 + 375 cents = 706.5, served rounded up.
    expect((await c.beta.sessions.retrieve(vendor.id)).usage.list_cost?.amount).toBe('707');

    const oai = await c.beta.sessions.create({
      agent: await agentOn(PRICED_OAI),
      environment_id: envId,
      budget: cents('1000'),
    });
    t.model.script(PRICED_OAI, {
      steps: [{ text: 'priced' }],
      usage: { ...USAGE, cache_read_input_tokens: 1_000 },
    });
    await turn(oai.id, 'go');
    // 1000 × $1000 + 500 × $2000 + 1000 cached × $100 per Mtok = $2.10.
    const got = await c.beta.sessions.retrieve(oai.id);
    expect(got.usage.list_cost?.amount).toBe('210');
    expect(got.usage.cache_read_input_tokens).toBe(1000);

    // A card without pi_config.cost: the vendor's list for its wire model, only when the
    // provider is the vendor itself (an `ant-compatible` endpoint has no list price).
    await card('budget-vendor-card', 'anthropic', undefined, 'claude-haiku-4-5');
    await card(
      'budget-compat-card',
      'ant-compatible',
      { api: 'anthropic-messages' },
      'claude-haiku-4-5',
    );
    const listed = await c.beta.sessions.create({
      agent: await agentOn('budget-vendor-card'),
      environment_id: envId,
      budget: cents('100'),
    });
    expect(listed.budget).toEqual(cents('100'));
    const compat = await failure(
      c.beta.sessions.create({
        agent: await agentOn('budget-compat-card'),
        environment_id: envId,
        budget: cents('100'),
      }),
    );
    expect(compat.errorCode).toBe('model_not_budgetable');
  });

  it('update rules: create-only, removal is final, amounts in USD cents', async () => {
    const c = t.client;
    const agent = await agentOn(PRICED);
    const plain = await c.beta.sessions.create({ agent, environment_id: envId });
    expect(plain.budget).toBeNull();
    const add = await failure(c.beta.sessions.update(plain.id, { budget: cents('500') }));
    expect(add.errorCode).toBe('budget_create_only');

    const capped = await c.beta.sessions.create({
      agent,
      environment_id: envId,
      budget: cents('500'),
    });
    const removed = await c.beta.sessions.update(capped.id, { budget: null });
    expect(removed.budget).toBeNull();
    const removedEvent = (await events(capped.id)).find((e) => e.type === 'session.updated');
    expect(removedEvent).toMatchObject({ budget: null });
    const readd = await failure(c.beta.sessions.update(capped.id, { budget: cents('900') }));
    expect(readd.errorCode).toBe('budget_create_only');
    // Omitted preserves; the title update leaves no budget behind.
    expect((await c.beta.sessions.update(capped.id, { title: 'x' })).budget).toBeNull();
    // Omitted preserves a budget; lowering it (still above the consumed cost) is allowed; a
    // replacement amount is checked like a created one.
    const kept = await c.beta.sessions.create({
      agent,
      environment_id: envId,
      budget: cents('700'),
    });
    expect((await c.beta.sessions.update(kept.id, { title: 'y' })).budget).toEqual(cents('700'));
    expect((await c.beta.sessions.update(kept.id, { budget: cents('50') })).budget).toEqual(
      cents('50'),
    );
    const bad = await failure(
      c.beta.sessions.update(kept.id, {
        budget: { type: 'limit', max_list_cost: { amount: '1.5', currency: 'USD' } },
      }),
    );
    expect((bad.error as any).error.details.field).toBe('budget.max_list_cost.amount');

    for (const [amount, currency, field] of [
      ['12.50', 'USD', 'budget.max_list_cost.amount'],
      ['0100', 'USD', 'budget.max_list_cost.amount'],
      ['100', 'EUR', 'budget.max_list_cost.currency'],
    ] as const) {
      const res = await t.http('/v1/sessions', {
        method: 'POST',
        headers: BETA,
        json: {
          agent,
          environment_id: envId,
          budget: { type: 'limit', max_list_cost: { amount, currency } },
        },
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as any;
      expect(body.error.details.field).toBe(field);
    }
  });

  it('a model with no list price cannot be budgeted; unpriced usage stops a budgeted session until the budget is removed, or raised once priced again', async () => {
    const c = t.client;
    const unpriced = await agentOn(UNPRICED);
    const refused = await failure(
      c.beta.sessions.create({ agent: unpriced, environment_id: envId, budget: cents('500') }),
    );
    expect(refused.errorCode).toBe('model_not_budgetable');
    const override = await failure(
      c.beta.sessions.create({
        agent: { type: 'agent_with_overrides', id: await agentOn(PRICED), model: UNPRICED },
        environment_id: envId,
        budget: cents('500'),
      } as any),
    );
    expect(override.errorCode).toBe('model_not_budgetable');

    // Without a budget it runs; its cost cannot be measured (list_cost null).
    const free = await c.beta.sessions.create({ agent: unpriced, environment_id: envId });
    t.model.script(UNPRICED, { steps: [{ text: 'unpriced' }], usage: USAGE });
    expect((await turn(free.id, 'go')).idle.stop_reason).toEqual({ type: 'end_turn' });
    expect((await c.beta.sessions.retrieve(free.id)).usage.list_cost).toBeNull();

    // The card loses its price mid-session: the next turn stops; raising is refused; removing
    // the budget, or raising it once the card is priced again, lets the session continue.
    const volatile = await agentOn(VOLATILE);
    const s = await c.beta.sessions.create({
      agent: volatile,
      environment_id: envId,
      budget: cents('5000'),
    });
    const s2 = await c.beta.sessions.create({
      agent: volatile,
      environment_id: envId,
      budget: cents('5000'),
    });
    const price = async (piConfig: Record<string, unknown>) => {
      const upd = await t.http(`/v1/svc/model_cards/${cardIds[VOLATILE]}`, {
        method: 'POST',
        headers: BETA,
        json: { pi_config: piConfig },
      });
      expect(upd.status, await upd.clone().text()).toBe(200);
    };
    await price({});
    t.model.script(
      VOLATILE,
      { steps: [{ text: 'unmeasured' }], usage: USAGE },
      { steps: [{ text: 'free again' }] },
    );
    await turn(s.id, 'one');
    const before = requestsFor(VOLATILE);
    expect((await turn(s.id, 'two')).idle.stop_reason).toEqual({ type: 'budget_reached' });
    expect(requestsFor(VOLATILE)).toBe(before);
    const raise = await failure(c.beta.sessions.update(s.id, { budget: cents('9000') }));
    expect(raise.errorCode).toBe('model_not_budgetable');
    await c.beta.sessions.update(s.id, { budget: null });
    expect((await turn(s.id, 'three')).idle.stop_reason).toEqual({ type: 'end_turn' });
    expect(requestsFor(VOLATILE)).toBe(before + 1);

    await turn(s2.id, 'one');
    expect((await turn(s2.id, 'two')).idle.stop_reason).toEqual({ type: 'budget_reached' });
    await price({ cost: COST });
    const raised = await c.beta.sessions.update(s2.id, { budget: cents('9000') });
    expect(raised.budget).toEqual(cents('9000'));
    expect((await turn(s2.id, 'three')).idle.stop_reason).toEqual({ type: 'end_turn' });
  });
});
