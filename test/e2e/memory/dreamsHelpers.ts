/**
 * Helpers shared by test/e2e/memory/dreams.test.ts and test/e2e/memory/dreams-update.test.ts: a tenant with a dreamer
 * model card, a session and a store of two memories; the scripted answer of a dream; waiting for
 * a dream to settle; reading an SDK error; listing stores and memories through the SDK.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'vitest';
import { BETA, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

/**
 * A tenant with a model card `dreamer-K` (the scripted model, or `dreamerUrl`: an Anthropic
 * endpoint in front of it), one session holding `said`, and a store holding /prefs/city.md
 * ("Lives in Berlin") and /prefs/home.md ("Home city: Berlin").
 */
export async function dreamTenant(
  t: TestPlatform,
  k: number,
  said = 'I moved to Lisbon last week',
  dreamerUrl?: string,
) {
  const { client, apiKey, tenantId } = await t.newTenant(`dreams-${k}`);
  const model = `dreamer-${k}`;
  if (dreamerUrl) {
    const res = await t.http('/v1/svc/model_cards', {
      method: 'POST',
      key: apiKey,
      headers: BETA,
      json: { model_id: model, provider: 'anthropic', model, base_url: dreamerUrl, api_key: 'k' },
    });
    expect(res.status, await res.clone().text()).toBe(200);
  } else await addModelCard(t, model, { key: apiKey });
  await addModelCard(t, `agent-${k}`, { key: apiKey });
  const envId = (await client.beta.environments.create({ name: `dreams-${k}` })).id;
  const agent = await client.beta.agents.create({ name: `a-${k}`, model: `agent-${k}` });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: said }] }],
  });
  const store = await client.beta.memoryStores.create({ name: `notes-${k}` });
  await client.beta.memoryStores.memories.create(store.id, {
    path: '/prefs/city.md',
    content: 'Lives in Berlin',
  });
  await client.beta.memoryStores.memories.create(store.id, {
    path: '/prefs/home.md',
    content: 'Home city: Berlin',
  });
  const inputs = [
    { type: 'memory_store' as const, memory_store_id: store.id },
    { type: 'sessions' as const, session_ids: [session.id] },
  ];
  return { client, apiKey, tenantId, model, store, session, inputs };
}

export const answer = (memories: Array<{ path: string; content: string }>) => ({
  steps: [{ text: JSON.stringify({ memories }) }],
  usage: { input_tokens: 120, output_tokens: 30 },
});

export const settled = (c: Anthropic, id: string) =>
  waitFor(async () => {
    const d = await c.beta.dreams.retrieve(id);
    return ['completed', 'failed', 'canceled'].includes(d.status) ? d : null;
  }, 20_000);

export async function apiError(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'expected an API error').toBeInstanceOf(Anthropic.APIError);
  const e = err as InstanceType<typeof Anthropic.APIError>;
  return {
    status: e.status!,
    message: String((e.error as any)?.error?.message),
    error: (e.error as any)?.error as Record<string, unknown> | undefined,
    headers: e.headers,
  };
}

export async function storesOf(c: Anthropic) {
  const out = [];
  for await (const s of c.beta.memoryStores.list({ include_archived: true })) out.push(s);
  return out;
}
export async function memoriesOf(c: Anthropic, storeId: string) {
  const out: Array<{ path: string; content: string | null }> = [];
  for await (const m of c.beta.memoryStores.memories.list(storeId, { view: 'full' }))
    if (m.type === 'memory') out.push({ path: m.path, content: m.content ?? null });
  return out;
}
