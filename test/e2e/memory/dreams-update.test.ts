/**
 * Dreams with `output_behavior: update_existing` (core/src/dreams/apply.ts, hold.ts, output.ts)
 * through the official TypeScript SDK against an in-process platform and the scripted model:
 * - the answer is applied to the INPUT store: a changed memory is updated in place (same id, a
 *   `modified` version), a new path created, a memory the answer dropped deleted (a `deleted`
 *   version), each version `created_by` the creating key; `outputs` is the input store;
 * - a memory changed through the API while the dream waits for its model (a gate in front of the
 *   scripted model holds the call) is kept, not overwritten; the other writes land and the dream
 *   fails `memory_conflict` naming the kept memory;
 * - a second update_existing dream on a store whose dream has not stopped → 409 (conflict,
 *   `x-should-retry: false`, naming the holder); of two concurrent creates exactly one wins;
 *   a create_new dream on that store is still accepted; after a cancel the store is free again;
 * - cancel before the apply step leaves the store's memories and versions untouched, outputs
 *   empty; an answer with overlapping paths fails `invalid_model_output` and writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { startModelGate, type ModelGate } from '../../kit/fixtures/gatedModel.js';
import { answer, apiError, dreamTenant, memoriesOf, settled } from './dreamsHelpers.js';

let model: ScriptedModelServer;
let gate: ModelGate;
let t: TestPlatform;
beforeAll(async () => {
  model = await startScriptedModelServer();
  gate = await startModelGate(model.url);
  t = await startPlatform({
    model,
    env: {
      SANDBOX_DRIVER: 'none',
      ANTHROPIC_API_KEY: '',
      RATE_LIMIT_PER_MINUTE: '100000',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(gate.url).host,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await gate?.close();
  await model?.close();
});

let n = 0;
const tenant = (dreamerUrl?: string) => dreamTenant(t, ++n, undefined, dreamerUrl);
type X = Awaited<ReturnType<typeof tenant>>;
const updating = (x: X) => ({
  inputs: x.inputs,
  model: x.model,
  output_behavior: { type: 'update_existing' as const, memory_store_id: x.store.id },
});
/** The memory id at `path` in x's store. */
async function idAt(x: X, path: string): Promise<string> {
  for await (const m of x.client.beta.memoryStores.memories.list(x.store.id))
    if (m.type === 'memory' && m.path === path) return m.id;
  throw new Error(`no memory at ${path}`);
}
async function versionsOf(x: X) {
  const out = [];
  for await (const v of x.client.beta.memoryStores.memoryVersions.list(x.store.id)) out.push(v);
  return out;
}
const slow = { steps: [{ delay_ms: 60_000 }, { text: '{"memories": []}' }] };

describe('dreams: update_existing', () => {
  it('writes the merged result into the input store with versions and deletes what the model dropped', async () => {
    const x = await tenant();
    const before = await versionsOf(x);
    const keyActor = before[0]!.created_by;
    const cityId = await idAt(x, '/prefs/city.md');
    model.script(
      x.model,
      answer([
        { path: '/prefs/city.md', content: 'Lives in Lisbon (moved from Berlin)' },
        { path: '/history/moves.md', content: 'Berlin → Lisbon' },
      ]),
    );
    const d = await x.client.beta.dreams.create(updating(x));
    expect(d).toMatchObject({
      status: 'pending',
      outputs: [],
      output_behavior: { type: 'update_existing', memory_store_id: x.store.id },
    });
    const done = await settled(x.client, d.id);
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(done.error).toBeNull();
    expect(done.outputs).toEqual([{ type: 'memory_store', memory_store_id: x.store.id }]);
    expect(done.usage).toMatchObject({ input_tokens: 120, output_tokens: 30 });
    expect(await memoriesOf(x.client, x.store.id)).toEqual([
      { path: '/history/moves.md', content: 'Berlin → Lisbon' },
      { path: '/prefs/city.md', content: 'Lives in Lisbon (moved from Berlin)' },
    ]);
    // Updated in place: same memory id, one new version per write, by the creating key.
    const cityNow = await x.client.beta.memoryStores.memories.retrieve(cityId, {
      memory_store_id: x.store.id,
    });
    expect(cityNow.content).toBe('Lives in Lisbon (moved from Berlin)');
    const added = (await versionsOf(x)).filter((v) => !before.some((b) => b.id === v.id));
    expect(added.map((v) => [v.operation, v.path]).sort()).toEqual([
      ['created', '/history/moves.md'],
      ['deleted', '/prefs/home.md'],
      ['modified', '/prefs/city.md'],
    ]);
    for (const v of added) expect(v.created_by).toEqual(keyActor);
    expect(keyActor).toMatchObject({ type: 'api_actor' });
    // The store is free again: another update_existing dream is accepted.
    model.script(x.model, answer([{ path: '/prefs/city.md', content: 'Lisbon' }]));
    const again = await x.client.beta.dreams.create(updating(x));
    expect((await settled(x.client, again.id)).status).toBe('completed');
  });

  it('a memory changed through the API while the dream runs is kept and reported', async () => {
    const x = await tenant(gate.url);
    const cityId = await idAt(x, '/prefs/city.md');
    model.script(
      x.model,
      answer([
        { path: '/prefs/city.md', content: 'Lives in Lisbon' },
        { path: '/prefs/home.md', content: 'Home city: Lisbon' },
      ]),
    );
    const d = await x.client.beta.dreams.create(updating(x));
    // The dream has read the store and waits for its model: change one memory now.
    await waitFor(async () => gate.arrived > 0);
    await x.client.beta.memoryStores.memories.update(cityId, {
      memory_store_id: x.store.id,
      content: 'Lives in Porto',
    });
    gate.open();
    const done = await settled(x.client, d.id);
    expect(done.status).toBe('failed');
    expect(done.error?.type).toBe('memory_conflict');
    expect(done.error?.message).toContain('/prefs/city.md');
    expect(done.error?.message).toContain(cityId);
    expect(done.error?.message).toMatch(/wrote 1 of its 2 changes/);
    expect(done.outputs).toEqual([{ type: 'memory_store', memory_store_id: x.store.id }]);
    // Someone else's write survives; the dream's other write landed.
    expect(await memoriesOf(x.client, x.store.id)).toEqual([
      { path: '/prefs/city.md', content: 'Lives in Porto' },
      { path: '/prefs/home.md', content: 'Home city: Lisbon' },
    ]);
  });

  it('a second update_existing dream on a held store is a 409; concurrent creates: one wins', async () => {
    const x = await tenant();
    model.script(x.model, slow);
    const first = await x.client.beta.dreams.create(updating(x));
    await waitFor(async () => model.requests.some((r) => r.model === x.model));
    const e = await apiError(x.client.beta.dreams.create(updating(x)));
    expect(e.status).toBe(409);
    expect(e.error?.type).toBe('conflict');
    expect(e.message).toContain(first.id);
    expect(e.message).toContain('output_behavior.memory_store_id');
    expect(e.headers?.get('x-should-retry')).toBe('false');
    // create_new only reads the store: still accepted.
    model.script(x.model, answer([]));
    const copy = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    expect((await settled(x.client, copy.id)).status).toBe('completed');
    // Canceled: the store is free again.
    await x.client.beta.dreams.cancel(first.id);
    await settled(x.client, first.id);
    const y = await tenant();
    model.script(y.model, slow, slow);
    const both = await Promise.allSettled([
      y.client.beta.dreams.create(updating(y)),
      y.client.beta.dreams.create(updating(y)),
    ]);
    const won = both.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((await apiError(Promise.reject(lost.reason))).status).toBe(409);
    await y.client.beta.dreams.cancel((won[0] as PromiseFulfilledResult<{ id: string }>).value.id);
    model.script(x.model, answer([]));
    const next = await waitFor(async () =>
      x.client.beta.dreams.create(updating(x)).catch(() => null),
    );
    expect((await settled(x.client, next.id)).status).toBe('completed');
  });

  it('cancel before the apply step leaves the store untouched; a bad answer writes nothing', async () => {
    const x = await tenant();
    const before = await versionsOf(x);
    const memoriesBefore = await memoriesOf(x.client, x.store.id);
    model.script(x.model, slow);
    const abortedBefore = model.aborted;
    const d = await x.client.beta.dreams.create(updating(x));
    await waitFor(async () => model.requests.some((r) => r.model === x.model));
    expect((await x.client.beta.dreams.cancel(d.id)).status).toBe('canceled');
    await waitFor(async () => model.aborted > abortedBefore);
    expect(await x.client.beta.dreams.retrieve(d.id)).toMatchObject({
      status: 'canceled',
      outputs: [],
      error: null,
    });
    // Overlapping paths: the whole answer is refused before any write.
    model.script(
      x.model,
      answer([
        { path: '/prefs/city.md', content: 'Lisbon' },
        { path: '/prefs/city.md/old', content: 'Berlin' },
      ]),
    );
    const bad = await waitFor(async () =>
      x.client.beta.dreams.create(updating(x)).catch(() => null),
    );
    const done = await settled(x.client, bad.id);
    expect(done.status).toBe('failed');
    expect(done.error?.type).toBe('invalid_model_output');
    expect(done.error?.message).toMatch(/memories\[1\].*under "\/prefs\/city\.md"/);
    expect(done.outputs).toEqual([]);
    expect(await memoriesOf(x.client, x.store.id)).toEqual(memoriesBefore);
    expect((await versionsOf(x)).map((v) => v.id)).toEqual(before.map((v) => v.id));
  });
});
