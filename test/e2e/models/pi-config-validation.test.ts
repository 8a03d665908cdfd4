/**
 * A model card's applied `pi_config` fields are validated at card create and update
 * (core/src/models/piConfig.ts): a value the platform would otherwise ignore at request time is
 * a 400 naming it, and nothing is stored. Descriptive keys pass through unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(async () => {
  await t?.close();
});

const card = (model_id: string, pi_config: unknown) => ({
  model_id,
  provider: 'anthropic',
  model: model_id,
  base_url: t.model.url,
  api_key: 'k',
  pi_config,
});

describe('pi_config validation', () => {
  it('refuses values that would be ignored, naming the field; stores nothing', async () => {
    const { apiKey } = await t.newTenant('pi-config');
    const post = (json: unknown) =>
      t.http('/v1/svc/model_cards', { method: 'POST', key: apiKey, headers: BETA, json });
    const cases: Array<[unknown, string]> = [
      [{ reasoning: 'yes' }, 'pi_config.reasoning'],
      [{ contextWindow: 0 }, 'pi_config.contextWindow'],
      [{ maxTokens: 1.5 }, 'pi_config.maxTokens'],
      [{ thinkingLevelMap: { turbo: 'x' } }, 'pi_config.thinkingLevelMap.turbo'],
      [{ thinkingLevelMap: { high: { budget: 1 } } }, 'pi_config.thinkingLevelMap.high'],
      [{ headers: { 'x-ok': 1 } }, 'pi_config.headers.x-ok'],
      [{ headers: { 'bad name': 'v' } }, 'pi_config.headers.bad name'],
      [{ headers: { Authorization: 'Bearer stolen' } }, 'pi_config.headers.Authorization'],
      [{ headers: { host: 'evil.example' } }, 'pi_config.headers.host'],
      [{ cost: { input: -1, output: 1 } }, 'pi_config.cost.input'],
      [{ cost: 'cheap' }, 'pi_config.cost'],
    ];
    for (const [pi, field] of cases) {
      const res = await post(card(`m-${cases.indexOf([pi, field] as never)}`, pi));
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(pi)).toBe(400);
      expect(body.error.message).toContain(field);
    }
    const list = await t.http('/v1/svc/model_cards', { key: apiKey, headers: BETA });
    expect(((await list.json()) as any).data).toEqual([]);

    const good = {
      reasoning: true,
      contextWindow: 200_000,
      maxTokens: 8192,
      thinkingLevelMap: { low: 'low', medium: 2048, high: null },
      headers: { 'x-team': 'a' },
      cost: { input: 3, output: 15, cacheRead: 0.3 },
      input: ['text', 'image'],
      compat: { supportsStrictMode: true },
    };
    const ok = await post(card('m-good', good));
    expect(ok.status).toBe(200);
    const created = (await ok.json()) as any;
    expect(created.pi_config).toEqual(good);
    const id = created.id;
    const bad = await t.http(`/v1/svc/model_cards/${id}`, {
      method: 'POST',
      key: apiKey,
      headers: BETA,
      json: { pi_config: { headers: { 'x-api-key': 'k2' } } },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain('pi_config.headers.x-api-key');
  });
});
