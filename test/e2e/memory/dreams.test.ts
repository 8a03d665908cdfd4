/**
 * Dreams (core/src/dreams, gateway/src/routes/dreams.ts, the worker's dream runner) through the
 * official TypeScript SDK (`client.beta.dreams`, which sends `dreaming-2026-04-21` itself) against
 * an in-process platform whose model cards point at the scripted model:
 * - create → pending with empty outputs → completed: the NEW output store holds exactly the
 *   memories of the model's JSON answer; the input store's memories and versions are unchanged;
 *   the model request carried the store's memories, the session's canonical events and the
 *   instructions; usage counts the model's tokens;
 * - a second claim of a running dream is refused (compare-and-swap); an expired claim (a dead
 *   worker) is taken over by the scan;
 * - cancel of a slow dream: canceled, the model call aborted, no output store written, final;
 * - a model answering garbage, a bad path or entries the store refuses → failed with error
 *   {type: invalid_model_output, message naming the entry}, no output store (a half-filled one
 *   is deleted); a model error → failed with the model error's type;
 * - DREAM_MAX_RUN_MS (a second platform at 300 ms): failed with error type `timeout`;
 * - bad input → 400 naming the field (unknown model, speed fast, an update_existing target
 *   that is not the input store or is missing, a target with create_new, missing or repeated
 *   inputs, another tenant's store and session); another tenant's dream → 404;
 * - list (newest first, statuses, created_at[gt|lt], include_archived) and archive (final
 *   dreams only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { answer, apiError, dreamTenant, memoriesOf, settled, storesOf } from './dreamsHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  // No fallback vendor key: a model without a card is refused.
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', ANTHROPIC_API_KEY: '', RATE_LIMIT_PER_MINUTE: '100000' },
  });
});
afterAll(async () => {
  await t?.close();
});

let n = 0;
/** A tenant with a model card `dreamer-N` (scripted model) and one session holding `said`. */
const tenant = (said?: string) => dreamTenant(t, ++n, said);

describe('dreams', () => {
  it('create → completed: a new store holds the merged memories; the input store is unchanged', async () => {
    const x = await tenant();
    const versionsBefore = await x.client.beta.memoryStores.memoryVersions.list(x.store.id);
    t.model.script(
      x.model,
      answer([{ path: '/prefs/city.md', content: 'Lives in Lisbon (moved from Berlin)' }]),
    );
    const d = await x.client.beta.dreams.create({
      inputs: x.inputs,
      model: x.model,
      instructions: 'Keep one file per fact.',
    });
    expect(d).toMatchObject({
      type: 'dream',
      status: 'pending',
      outputs: [],
      error: null,
      model: { id: x.model, speed: 'standard' },
      output_behavior: { type: 'create_new' },
      instructions: 'Keep one file per fact.',
      archived_at: null,
      ended_at: null,
      session_id: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    });
    expect(d.id).toMatch(/^drm_/);
    expect(d.inputs).toEqual(x.inputs);

    const done = await settled(x.client, d.id);
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(done.ended_at).not.toBeNull();
    expect(done.usage).toMatchObject({ input_tokens: 120, output_tokens: 30 });
    // The dream's model call is in the cost report's ledger, kind `dream`.
    const ledger = await t.http(
      `/v1/svc/cost_report?starting_at=${new Date(Date.now() - 3_600_000).toISOString()}&kind=dream&tenant_id=${x.tenantId}&group_by=kind`,
      { headers: BETA },
    );
    expect(((await ledger.json()) as any).rows).toEqual([
      expect.objectContaining({
        kind: 'dream',
        calls: 1,
        usage: expect.objectContaining({ input_tokens: 120, output_tokens: 30 }),
      }),
    ]);
    expect(done.outputs).toHaveLength(1);
    const out = done.outputs[0]!.memory_store_id;
    expect(out).not.toBe(x.store.id);
    expect(await memoriesOf(x.client, out)).toEqual([
      { path: '/prefs/city.md', content: 'Lives in Lisbon (moved from Berlin)' },
    ]);
    // The input store: same memories, same versions.
    expect(await memoriesOf(x.client, x.store.id)).toEqual([
      { path: '/prefs/city.md', content: 'Lives in Berlin' },
      { path: '/prefs/home.md', content: 'Home city: Berlin' },
    ]);
    const versionsAfter = await x.client.beta.memoryStores.memoryVersions.list(x.store.id);
    expect(versionsAfter.data.map((v) => v.id)).toEqual(versionsBefore.data.map((v) => v.id));
    // What the model was asked: the memories, the session's events, the instructions.
    const reqs = t.model.requests.filter((r) => r.model === x.model);
    expect(reqs).toHaveLength(1);
    const sent = JSON.stringify(reqs[0]!.body);
    expect(sent).toContain('Lives in Berlin');
    expect(sent).toContain('Home city: Berlin');
    expect(sent).toContain('I moved to Lisbon last week');
    expect(sent).toContain('user.message');
    expect(sent).toContain('Keep one file per fact.');
    // A completed dream is not claimable again.
    expect(await t.server.platform.dreams.claimAndRun(x.tenantId, d.id)).toBe(false);
  });

  it('cancel stops a slow dream: canceled, model call aborted, no output store; one claim only', async () => {
    const x = await tenant();
    t.model.script(x.model, {
      steps: [{ delay_ms: 60_000 }, { text: '{"memories": []}' }],
    });
    const storesBefore = (await storesOf(x.client)).map((s) => s.id);
    const abortedBefore = t.model.aborted;
    const d = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    await waitFor(async () => t.model.requests.some((r) => r.model === x.model));
    expect((await x.client.beta.dreams.retrieve(d.id)).status).toBe('running');
    // Two workers never run one dream: the claim is a compare-and-swap.
    expect(await t.server.platform.dreams.claimAndRun(x.tenantId, d.id)).toBe(false);
    const canceled = await x.client.beta.dreams.cancel(d.id);
    expect(canceled.status).toBe('canceled');
    expect(canceled.ended_at).not.toBeNull();
    await waitFor(async () => t.model.aborted > abortedBefore);
    // Final: cancel again returns it unchanged; nothing was written.
    expect((await x.client.beta.dreams.cancel(d.id)).status).toBe('canceled');
    const after = await x.client.beta.dreams.retrieve(d.id);
    expect(after).toMatchObject({ status: 'canceled', outputs: [], error: null });
    expect((await storesOf(x.client)).map((s) => s.id)).toEqual(storesBefore);
    expect(t.model.requests.filter((r) => r.model === x.model)).toHaveLength(1);
  });

  it('an expired claim (dead worker) is taken over by the scan', async () => {
    const x = await tenant();
    t.model.script(
      x.model,
      { steps: [{ delay_ms: 60_000 }, { text: '{"memories": []}' }] },
      answer([{ path: '/city.md', content: 'Lisbon' }]),
    );
    const d = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    await waitFor(async () => t.model.requests.some((r) => r.model === x.model));
    const dreams = t.server.platform.dreams;
    // Not yet expired: nothing to take over.
    expect(await dreams.claimAndRun(x.tenantId, d.id)).toBe(false);
    // Past the claim's lease (DREAM_MAX_RUN_MS + 30 s): the scan claims and runs it again.
    expect(await dreams.sweep(Date.now() + 11 * 60_000)).toBeGreaterThanOrEqual(1);
    const done = await settled(x.client, d.id);
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(await memoriesOf(x.client, done.outputs[0]!.memory_store_id)).toEqual([
      { path: '/city.md', content: 'Lisbon' },
    ]);
    expect(t.model.requests.filter((r) => r.model === x.model)).toHaveLength(2);
  });

  it('a model answering garbage fails the dream with a clear error and writes nothing', async () => {
    const x = await tenant();
    const storesBefore = (await storesOf(x.client)).map((s) => s.id);
    t.model.script(x.model, { steps: [{ text: 'Sure! Here are your memories: lots of them' }] });
    const d = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    const done = await settled(x.client, d.id);
    expect(done.status).toBe('failed');
    expect(done.error?.type).toBe('invalid_model_output');
    expect(done.error?.message).toMatch(/not JSON/);
    expect(done.outputs).toEqual([]);
    // A path the store refuses is also the model's fault, named.
    t.model.script(x.model, answer([{ path: 'no-slash.md', content: 'x' }]));
    const d2 = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    const done2 = await settled(x.client, d2.id);
    expect(done2.error?.type).toBe('invalid_model_output');
    expect(done2.error?.message).toMatch(/memories\[0\]\.path/);
    // Entries the store refuses (a path under another memory): the half-filled output is dropped.
    t.model.script(
      x.model,
      answer([
        { path: '/notes', content: 'a' },
        { path: '/notes/b.md', content: 'b' },
      ]),
    );
    const d4 = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    const done4 = await settled(x.client, d4.id);
    expect(done4.error?.type).toBe('invalid_model_output');
    expect(done4.error?.message).toMatch(/memories\[1\].*refused by the store/);
    expect(done4.outputs).toEqual([]);
    // A model error: failed with the model error's type.
    t.model.script(x.model, {
      steps: [{ http_error: { status: 529, type: 'overloaded_error', message: 'busy' } }],
    });
    const d3 = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    const done3 = await settled(x.client, d3.id);
    expect(done3.status).toBe('failed');
    expect(done3.error?.type).toBe('model_overloaded_error');
    expect((await storesOf(x.client)).map((s) => s.id)).toEqual(storesBefore);
    // A failed dream cannot be canceled.
    const e = await apiError(x.client.beta.dreams.cancel(d.id));
    expect(e.status).toBe(400);
  });

  it('bad input is a 400 naming the field; another tenant gets 404 and cannot use our ids', async () => {
    const x = await tenant();
    const y = await tenant();
    const bad = async (body: any, field: string) => {
      const e = await apiError(x.client.beta.dreams.create(body));
      expect(e.status, e.message).toBe(400);
      expect(e.message).toContain(field);
    };
    await bad({ inputs: x.inputs, model: 'no-such-model' }, 'model');
    await bad({ inputs: x.inputs, model: { id: x.model, speed: 'fast' } }, 'model.speed');
    // update_existing writes only its input store (test/e2e/memory/dreams-update.test.ts covers the rest).
    const other = await x.client.beta.memoryStores.create({ name: 'other' });
    await bad(
      {
        inputs: x.inputs,
        model: x.model,
        output_behavior: { type: 'update_existing', memory_store_id: other.id },
      },
      'output_behavior.memory_store_id',
    );
    await bad(
      { inputs: x.inputs, model: x.model, output_behavior: { type: 'update_existing' } },
      'output_behavior.memory_store_id',
    );
    await bad(
      {
        inputs: x.inputs,
        model: x.model,
        output_behavior: { type: 'create_new', memory_store_id: x.store.id },
      },
      'output_behavior.memory_store_id',
    );
    await bad({ inputs: [x.inputs[0]], model: x.model }, 'inputs');
    await bad({ inputs: [x.inputs[1]], model: x.model }, 'inputs');
    await bad(
      {
        inputs: [x.inputs[0], { type: 'sessions', session_ids: [x.session.id, x.session.id] }],
        model: x.model,
      },
      'inputs[1].session_ids[1]',
    );
    await bad({ inputs: x.inputs, model: x.model, instructions: 'x'.repeat(4097) }, 'instructions');
    // Another tenant's store and session are unknown here.
    await bad({ inputs: [y.inputs[0], x.inputs[1]], model: x.model }, 'inputs[0].memory_store_id');
    await bad({ inputs: [x.inputs[0], y.inputs[1]], model: x.model }, 'inputs[1].session_ids[0]');
    // An archived store cannot be dreamt on.
    const archived = await x.client.beta.memoryStores.create({ name: 'old' });
    await x.client.beta.memoryStores.archive(archived.id);
    await bad(
      {
        inputs: [{ type: 'memory_store', memory_store_id: archived.id }, x.inputs[1]],
        model: x.model,
      },
      'inputs[0].memory_store_id',
    );
    // y's dream is a 404 for x on every route.
    t.model.script(y.model, answer([]));
    const yd = await y.client.beta.dreams.create({ inputs: y.inputs, model: y.model });
    for (const call of [
      () => x.client.beta.dreams.retrieve(yd.id),
      () => x.client.beta.dreams.cancel(yd.id),
      () => x.client.beta.dreams.archive(yd.id),
    ])
      expect((await apiError(call())).status).toBe(404);
    expect((await x.client.beta.dreams.list()).data.map((d) => d.id)).not.toContain(yd.id);
    await settled(y.client, yd.id);
  });

  it('list newest first with statuses and include_archived; archive only final dreams', async () => {
    const x = await tenant();
    t.model.script(x.model, answer([{ path: '/a.md', content: 'a' }]));
    const first = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    await settled(x.client, first.id);
    t.model.script(x.model, { steps: [{ delay_ms: 60_000 }, { text: '{"memories": []}' }] });
    const second = await x.client.beta.dreams.create({ inputs: x.inputs, model: x.model });
    // A live dream cannot be archived.
    const e = await apiError(x.client.beta.dreams.archive(second.id));
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/cancel/);
    expect((await x.client.beta.dreams.list()).data.map((d) => d.id)).toEqual([
      second.id,
      first.id,
    ]);
    const after = await x.client.beta.dreams.list({ 'created_at[gt]': first.created_at });
    expect(after.data.map((d) => d.id)).toEqual([second.id]);
    const before = await x.client.beta.dreams.list({ 'created_at[lt]': second.created_at });
    expect(before.data.map((d) => d.id)).toEqual([first.id]);
    const completed = await x.client.beta.dreams.list({ statuses: ['completed'] });
    expect(completed.data.map((d) => d.id)).toEqual([first.id]);
    const archived = await x.client.beta.dreams.archive(first.id);
    expect(archived.archived_at).not.toBeNull();
    expect((await x.client.beta.dreams.archive(first.id)).archived_at).toBe(archived.archived_at);
    expect((await x.client.beta.dreams.list()).data.map((d) => d.id)).toEqual([second.id]);
    expect(
      (await x.client.beta.dreams.list({ include_archived: true })).data.map((d) => d.id),
    ).toEqual([second.id, first.id]);
    expect((await x.client.beta.dreams.retrieve(first.id)).archived_at).toBe(archived.archived_at);
    await x.client.beta.dreams.cancel(second.id);
  });
});

describe('dreams: bounded run time', () => {
  let t2: TestPlatform;
  beforeAll(async () => {
    t2 = await startPlatform({
      env: { SANDBOX_DRIVER: 'none', DREAM_MAX_RUN_MS: '300' },
      model: t.model,
    });
  });
  afterAll(async () => {
    await t2?.close();
  });

  it('a dream running longer than DREAM_MAX_RUN_MS fails with error type timeout', async () => {
    const { client } = await t2.newTenant('slow');
    const env = await client.beta.environments.create({ name: 'slow' });
    const agent = await client.beta.agents.create({ name: 'a', model: 'slow-agent' });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const store = await client.beta.memoryStores.create({ name: 'slow' });
    t2.model.script('slow-dreamer', { steps: [{ delay_ms: 60_000 }, { text: '{"memories":[]}' }] });
    const d = await client.beta.dreams.create({
      inputs: [
        { type: 'memory_store', memory_store_id: store.id },
        { type: 'sessions', session_ids: [session.id] },
      ],
      model: 'slow-dreamer',
    });
    const done = await settled(client, d.id);
    expect(done.status).toBe('failed');
    expect(done.error).toEqual({
      type: 'timeout',
      message: 'the dream ran longer than DREAM_MAX_RUN_MS (300 ms)',
    });
    expect(done.outputs).toEqual([]);
  });
});
