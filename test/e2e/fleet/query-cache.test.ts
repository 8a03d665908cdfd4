/**
 * The model card and webhook endpoint caches (core/src/store/readCache.ts QueryReadCache) on
 * a store shared by two platforms, as processes of a fleet (each with its own bus, so a session's
 * turns run where its message was sent):
 * - with a shared coordination (its pub/sub carries each write's announcement), a card created
 *   or deleted through one platform applies to the other's next model request at once;
 * - with announcements lost (two coordinations), within SHARED_QUERY_CACHE_TTL_MS.
 * One platform on its own store: test/e2e/models/model-cards-full.test.ts, test/e2e/webhooks/webhooks.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SHARED_QUERY_CACHE_TTL_MS, singleStore, sleep } from '@agentfleet/core';
import { EmbeddedBus, embeddedCoordination, openEmbeddedStore } from '@agentfleet/core/adapters';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { untilIdle, userMessage } from '../../kit/turnHelpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

/** Two platforms on one store; `sharedPubSub` gives them one coordination. */
async function fleet(sharedPubSub: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'agentfleet-query-cache-'));
  const store = await openEmbeddedStore({ dir });
  const model = await startScriptedModelServer();
  cleanups.push(async () => {
    await store.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const shared = embeddedCoordination();
  const start = async () => {
    const p = await startPlatform({
      env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' },
      model,
      overrides: {
        store: { store, router: singleStore(store) },
        bus: new EmbeddedBus(),
        coordination: sharedPubSub ? shared : embeddedCoordination(),
      },
    });
    cleanups.push(() => p.close());
    return p;
  };
  return { one: await start(), two: await start(), model };
}

let n = 0;
/** A session of the operator's tenant on platform `p`, on a model with no card yet. */
async function session(p: TestPlatform) {
  const modelId = `cached-${++n}`;
  const agent = await p.client.beta.agents.create({ name: modelId, model: modelId });
  const env = await p.client.beta.environments.create({ name: modelId });
  const s = await p.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  return { modelId, sid: s.id };
}

async function card(p: TestPlatform, model: ScriptedModelServer, modelId: string) {
  const res = await p.http('/v1/svc/model_cards', {
    method: 'POST',
    headers: BETA,
    json: {
      provider: 'anthropic',
      base_url: model.url,
      api_key: 'sk-card-0000',
      model_id: modelId,
      model: `${modelId}-wire`,
    },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

const wireModels = (model: ScriptedModelServer, modelId: string) =>
  model.requests.filter((r) => r.model.startsWith(modelId)).map((r) => r.model);

describe('model card lookups on a store shared by two platforms', () => {
  it("with a shared pub/sub, one platform's card create and delete apply to the other's next request", async () => {
    const { one, two, model } = await fleet(true);
    const { modelId, sid } = await session(one);
    const turn = () => untilIdle(one.client, sid, [userMessage('hi')]);
    await turn(); // `one` looks the card up: none (the fallback key)
    const id = await card(two, model, modelId);
    await turn();
    const del = await two.http(`/v1/svc/model_cards/${id}`, { method: 'DELETE', headers: BETA });
    expect(del.status).toBe(200);
    await turn();
    expect(wireModels(model, modelId)).toEqual([modelId, `${modelId}-wire`, modelId]);
  });

  it('with announcements lost, the other platform applies the change within the TTL', async () => {
    const { one, two, model } = await fleet(false);
    const { modelId, sid } = await session(one);
    const turn = () => untilIdle(one.client, sid, [userMessage('hi')]);
    await turn();
    await card(two, model, modelId);
    await turn(); // `one` may still hold "no card" (it does unless this ran slowly)
    await sleep(SHARED_QUERY_CACHE_TTL_MS + 200);
    await turn();
    const sent = wireModels(model, modelId);
    expect([sent[0], sent[2]]).toEqual([modelId, `${modelId}-wire`]);
  });
});
