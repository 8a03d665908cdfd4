/**
 * The agent's `effort` and the model card's `pi_config` reach the provider request
 * (workers/src/turn/modelSettings.ts), on both protocols, observed at the scripted model:
 * - effort is normalised to the nearest level the card's thinkingLevelMap supports (ties go
 *   lower; `max` is never claimed), the same levels /v1/models reports; the map's value is sent
 *   (OpenAI reasoning_effort; Anthropic: a numeric value is the thinking budget); a card
 *   without `reasoning: true` gets no thinking; a card without pi_config keeps today's levels;
 * - pi_config.maxTokens caps max_tokens / max_completion_tokens, thinking included;
 * - pi_config.headers are sent and never replace the credential headers;
 * - pi_config.contextWindow: the oldest turns are left out once the conversation outgrows it,
 *   and a turn that cannot fit is a session.error without any request being sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  envId = (await t.client.beta.environments.create({ name: 'effort' })).id;
});
afterAll(async () => {
  await t?.close();
});

let n = 0;
/** A card with its own wire model (so its requests are told apart) and a session on it. */
async function sessionOn(
  protocol: 'anthropic' | 'openai',
  pi: Record<string, unknown> | undefined,
  effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max',
) {
  const wire = `pi-${protocol}-${++n}`;
  await addModelCard(t, wire, { provider: protocol, apiKey: `sk-card-${n}`, piConfig: pi });
  const agent = await t.client.beta.agents.create({
    name: `effort-${n}`,
    model: effort ? { id: wire, effort } : wire,
  });
  const session = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  return { wire, sid: session.id, key: `sk-card-${n}` };
}

const events = async (sid: string) =>
  ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[];

/** Sends one message and waits for the turn's session.status_idle. */
async function turn(sid: string, text: string) {
  const idles = (await events(sid)).filter((e) => e.type === 'session.status_idle').length;
  await t.client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
  });
  return waitFor(async () => {
    const ev = await events(sid);
    return ev.filter((e) => e.type === 'session.status_idle').length > idles ? ev : null;
  });
}

const lastRequest = (wire: string) => t.model.requests.filter((r) => r.model === wire).at(-1)!;

/** The request one turn sends for this card and effort. */
async function requestFor(
  protocol: 'anthropic' | 'openai',
  pi: Record<string, unknown> | undefined,
  effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max',
) {
  const s = await sessionOn(protocol, pi, effort);
  await turn(s.sid, 'hi');
  return { ...lastRequest(s.wire), key: s.key };
}

describe('effort normalised to the levels the card supports', () => {
  const lowHigh = { reasoning: true, thinkingLevelMap: { low: 'low', medium: null, high: 'high' } };

  it('anthropic: nearest supported level (ties lower, max down), numeric map value as budget', async () => {
    const medium = await requestFor('anthropic', lowHigh, 'medium');
    expect(medium.body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    const max = await requestFor('anthropic', lowHigh, 'max');
    expect(max.body.thinking).toEqual({ type: 'enabled', budget_tokens: 10000 });
    const numeric = await requestFor(
      'anthropic',
      { reasoning: true, thinkingLevelMap: { high: 3000 } },
      'low',
    );
    expect(numeric.body.thinking).toEqual({ type: 'enabled', budget_tokens: 3000 });
    // No map: low/medium/high; xhigh comes down to high.
    const noMap = await requestFor('anthropic', { reasoning: true }, 'xhigh');
    expect(noMap.body.thinking).toEqual({ type: 'enabled', budget_tokens: 10000 });
  });

  it('no reasoning in pi_config → no thinking; no pi_config → the agent level as before', async () => {
    const plain = await requestFor('anthropic', { reasoning: false, maxTokens: 64000 }, 'high');
    expect(plain.body.thinking).toBeUndefined();
    const noSupported = await requestFor(
      'openai',
      { reasoning: true, thinkingLevelMap: { low: null, medium: null, high: null } },
      'high',
    );
    expect(noSupported.body.reasoning_effort).toBeUndefined();
    const unknown = await requestFor('anthropic', undefined, 'xhigh');
    expect(unknown.body.thinking).toEqual({ type: 'enabled', budget_tokens: 20000 });
  });

  it("openai: the map's value for the nearest level is the reasoning_effort", async () => {
    const pi = {
      reasoning: true,
      thinkingLevelMap: { low: 'minimal', medium: 'medium', high: null },
    };
    expect((await requestFor('openai', pi, 'high')).body.reasoning_effort).toBe('medium');
    expect((await requestFor('openai', pi, 'low')).body.reasoning_effort).toBe('minimal');
    expect((await requestFor('openai', { reasoning: true }, 'max')).body.reasoning_effort).toBe(
      'high',
    );
  });

  it('/v1/models reports exactly the levels a request can use', async () => {
    const s = await sessionOn('anthropic', lowHigh, 'medium');
    const info = (await (await t.http(`/v1/models/${s.wire}`, { headers: BETA })).json()) as any;
    const effort = info.capabilities.effort;
    expect([effort.low, effort.medium, effort.high, effort.xhigh, effort.max]).toEqual([
      { supported: true },
      { supported: false },
      { supported: true },
      { supported: false },
      { supported: false },
    ]);
  });
});

describe('pi_config limits and headers', () => {
  it('maxTokens caps the output on both protocols, thinking included', async () => {
    const ant = await requestFor('anthropic', { maxTokens: 1500 });
    expect(ant.body.max_tokens).toBe(1500);
    expect(ant.body.thinking).toBeUndefined();
    const thinking = await requestFor(
      'anthropic',
      { reasoning: true, thinkingLevelMap: { high: 'high' }, maxTokens: 4000 },
      'high',
    );
    expect(thinking.body.max_tokens).toBe(4000);
    expect(thinking.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    // Too little room for the smallest budget: no thinking rather than over the cap.
    const tight = await requestFor(
      'anthropic',
      { reasoning: true, thinkingLevelMap: { high: 'high' }, maxTokens: 1500 },
      'high',
    );
    expect(tight.body).toMatchObject({ max_tokens: 1500 });
    expect(tight.body.thinking).toBeUndefined();
    const oai = await requestFor('openai', { maxTokens: 1200 });
    expect(oai.body.max_completion_tokens).toBe(1200);
    // A card allowing more than the platform's per-call cap (TURN_MAX_TOKENS 8192) gets the cap.
    expect((await requestFor('openai', { maxTokens: 100000 })).body.max_completion_tokens).toBe(
      8192,
    );
  });

  it('headers reach the provider and never replace the credentials', async () => {
    const headers = {
      'x-pi-header': 'from-pi',
      'x-api-key': 'sk-stolen',
      authorization: 'Bearer sk-stolen',
      'anthropic-version': '1999-01-01',
    };
    // Refused at card create (test/e2e/models/pi-config-validation.test.ts) …
    await expect(sessionOn('anthropic', { headers })).rejects.toThrow();
    // … and a card stored before that check (written here directly) still cannot replace them.
    const legacy = async (protocol: 'anthropic' | 'openai') => {
      const s = await sessionOn(protocol, { headers: { 'x-pi-header': 'before' } });
      const cards = t.server.platform.collections.modelCards;
      const [doc] = await cards.scanAll({ model_id: s.wire } as never, { limit: 1 });
      await cards.updateOne(
        doc!.tenant_id,
        { _id: doc!._id },
        { $set: { pi_config: { headers } } },
      );
      await turn(s.sid, 'hi');
      return { ...lastRequest(s.wire), key: s.key };
    };
    const ant = await legacy('anthropic');
    expect(ant.headers['x-pi-header']).toBe('from-pi');
    expect(ant.headers['x-api-key']).toBe(ant.key);
    expect(ant.headers['anthropic-version']).toBe('2023-06-01');
    expect(ant.headers.authorization).toBeUndefined();
    const oai = await legacy('openai');
    expect(oai.headers['x-pi-header']).toBe('from-pi');
    expect(oai.headers.authorization).toBe(`Bearer ${oai.key}`);
    expect(oai.headers['x-api-key']).toBeUndefined();
  });
});

describe('pi_config.contextWindow', () => {
  const texts = (body: any, protocol: 'anthropic' | 'openai') =>
    JSON.stringify(protocol === 'anthropic' ? body.messages : body.messages.slice(1));

  it.each(['anthropic', 'openai'] as const)(
    '%s: the oldest turns are left out; a turn that cannot fit is refused unsent',
    async (protocol) => {
      const s = await sessionOn(protocol, { contextWindow: 4000 });
      const word = (i: number) => `turn${i}-`.repeat(300); // ~2,000 characters
      for (let i = 1; i <= 4; i++) await turn(s.sid, word(i));
      const req = lastRequest(s.wire);
      const sent = texts(req.body, protocol);
      expect(sent).toContain('turn4-');
      expect(sent).not.toContain('turn1-');
      // Input (at the usual ~4 characters a token) plus the answer's room stays within the window.
      const cap = protocol === 'anthropic' ? req.body.max_tokens : req.body.max_completion_tokens;
      expect(cap).toBeGreaterThan(0);
      expect(cap).toBeLessThan(8192);
      expect(cap + Math.ceil(JSON.stringify(req.body.messages).length / 4)).toBeLessThanOrEqual(
        4000,
      );

      const before = t.model.requests.filter((r) => r.model === s.wire).length;
      const ev = await turn(s.sid, 'x'.repeat(20_000));
      const error = ev.filter((e) => e.type === 'session.error').at(-1);
      expect(error.error.type).toBe('model_request_failed_error');
      expect(error.error.message).toMatch(/context window of 4000 tokens/);
      expect(error.error.retry_status.type).toBe('terminal');
      expect(t.model.requests.filter((r) => r.model === s.wire).length).toBe(before);
    },
  );
});
