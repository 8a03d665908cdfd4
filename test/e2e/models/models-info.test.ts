/**
 * `/v1/models` through the official TypeScript SDK: every BetaModelInfo field, projected from the
 * card's pi_config (core/src/models/info.ts); the vendor fallback's models listed; paging
 * with limit / after_id / before_id; an unknown model is a 404 and a bad cursor a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  const card = (model_id: string, pi_config?: Record<string, unknown>) =>
    t.http('/v1/svc/model_cards', {
      method: 'POST',
      headers: BETA,
      json: {
        model_id,
        provider: 'anthropic',
        model: model_id,
        base_url: t.model.url,
        api_key: 'sk-mi',
        ...(pi_config ? { pi_config } : {}),
      },
    });
  expect(
    (
      await card('mi-sonnet', {
        name: 'MI Sonnet',
        reasoning: true,
        input: ['text', 'image'],
        contextWindow: 200000,
        maxTokens: 64000,
        thinkingLevelMap: { low: 'low', medium: 'medium', high: 'high', xhigh: null },
      })
    ).status,
  ).toBe(200);
  expect((await card('mi-plain')).status).toBe(200);
});
afterAll(() => t?.close());

describe('BetaModelInfo', () => {
  it('projects every field from the card and its pi_config, claiming nothing it does not state', async () => {
    const m = await t.client.beta.models.retrieve('mi-sonnet');
    expect(m).toMatchObject({
      type: 'model',
      id: 'mi-sonnet',
      display_name: 'MI Sonnet',
      lifecycle: 'active',
      deprecated_at: null,
      retires_at: null,
      line: 'sonnet',
      max_input_tokens: 200000,
      max_tokens: 64000,
      allowed_fallback_models: null,
    });
    expect(m.capabilities).toMatchObject({
      image_input: { supported: true },
      pdf_input: { supported: false },
      batch: { supported: false },
      structured_outputs: { supported: false },
      thinking: { supported: true, types: { enabled: { supported: true } } },
      effort: {
        supported: true,
        low: { supported: true },
        high: { supported: true },
        max: { supported: false },
        xhigh: { supported: false },
      },
      server_tools: { supported: false },
      context_management: { supported: false },
    });
    const plain = await t.client.beta.models.retrieve('mi-plain');
    expect(plain).toMatchObject({
      display_name: 'mi-plain',
      capabilities: null,
      max_input_tokens: null,
      max_tokens: null,
      lifecycle: 'active',
    });
  });

  it('lists the cards and the vendor fallback models, paging with limit, after_id and before_id', async () => {
    const all: string[] = [];
    for await (const m of t.client.beta.models.list({ limit: 1 })) all.push(m.id);
    expect(all.slice(0, 2)).toEqual(['mi-sonnet', 'mi-plain']);
    expect(all).toContain('claude-sonnet-4-5'); // served through ANTHROPIC_API_KEY
    expect(new Set(all).size).toBe(all.length);
    const first = await t.client.beta.models.list({ limit: 2 });
    expect(first.data.map((m) => m.id)).toEqual(['mi-sonnet', 'mi-plain']);
    expect(first).toMatchObject({ has_more: true, first_id: 'mi-sonnet', last_id: 'mi-plain' });
    const after = await t.client.beta.models.list({ limit: 1, after_id: 'mi-plain' });
    expect(after.data.map((m) => m.id)).toEqual([all[2]]);
    const before = await t.client.beta.models.list({ limit: 5, before_id: all[2] });
    expect(before.data.map((m) => m.id)).toEqual(['mi-sonnet', 'mi-plain']);
    expect(before.has_more).toBe(false);
  });

  it('a reasoning card without a thinkingLevelMap reports the levels its requests use (low/medium/high)', async () => {
    const { apiKey, client } = await t.newTenant('mi-nomap');
    const res = await t.http('/v1/svc/model_cards', {
      method: 'POST',
      key: apiKey,
      headers: BETA,
      json: {
        model_id: 'mi-nomap',
        provider: 'anthropic',
        model: 'mi-nomap',
        base_url: t.model.url,
        api_key: 'sk-mi',
        pi_config: { reasoning: true },
      },
    });
    expect(res.status).toBe(200);
    const { effort } = (await client.beta.models.retrieve('mi-nomap')).capabilities!;
    expect([
      effort.supported,
      effort.low,
      effort.medium,
      effort.high,
      effort.xhigh,
      effort.max,
    ]).toEqual([
      true,
      { supported: true },
      { supported: true },
      { supported: true },
      { supported: false },
      { supported: false },
    ]);
  });

  it('an unknown model is a 404, a bad cursor or limit a 400 naming it', async () => {
    await expect(t.client.beta.models.retrieve('no-such-model')).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    for (const [q, field] of [
      ['after_id=nope', 'after_id'],
      ['limit=0', 'limit'],
      ['lifecycle[]=gone', 'lifecycle'],
    ]) {
      const res = await t.http(`/v1/models?${q}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.message).toContain(field);
    }
  });
});
