/**
 * Settings the SDK can send but this deployment has not built are refused with a 400 naming the
 * field and saying "not supported yet", and nothing is stored (core/src/api/unsupported.ts):
 * agent `multiagent` in its advisor entry and multiagent_20261001 forms (a coordinator roster is
 * built: test/e2e/agents/multiagent-roster.test.ts, test/e2e/threads/threads.test.ts), `user.tool_result` on a cloud session
 * (`user.interrupt.session_thread_id` names a thread of the session, else a 400; null accepted) (`system.message`
 * is built: test/e2e/events/system-message.test.ts; `user.define_outcome`: test/e2e/turns/outcomes.test.ts). Through the official TypeScript SDK and plain HTTP. A model card for a custom
 * provider (protocol from `pi_config.api`) is created without a probe and says so:
 * `{ok: null, reason: 'unsupported_provider'}` (spec, model cards rule 1).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

async function refused(p: Promise<unknown>, field: string) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  const body = (err as InstanceType<typeof Anthropic.BadRequestError>).error as any;
  expect(body.error.message).toContain(field);
  expect(body.error.message).toContain('not supported yet');
}

describe('unbuilt settings are refused, never stored', () => {
  it('agent multiagent: the advisor entry and multiagent_20261001 are refused on create and update', async () => {
    const c = t.client;
    const a = await c.beta.agents.create({ name: 'ok', model: 'claude-sonnet-4-5' });
    const before = (await c.beta.agents.list()).data.length;
    await refused(
      c.beta.agents.create({
        name: 'm',
        model: 'claude-sonnet-4-5',
        multiagent: { type: 'coordinator', agents: [a.id, { type: 'advisor', model: 'x' }] },
      } as any),
      'multiagent.agents[1]',
    );
    expect((await c.beta.agents.list()).data.length).toBe(before);
    await refused(
      c.beta.agents.update(a.id, {
        version: a.version,
        multiagent: { type: 'multiagent_20261001' },
      } as any),
      'multiagent.subagents',
    );
    const after = await c.beta.agents.retrieve(a.id);
    expect(after.version).toBe(a.version);
    expect((after as any).multiagent ?? null).toBeNull();
  });

  // Vaults are built: session vault_ids are validated, not refused (test/e2e/credentials/vaults.test.ts).
  it('session vault_ids: an unknown vault is a 400 naming vault_ids[0]; a real one is accepted', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'v' });
    const a = await c.beta.agents.create({ name: 'v', model: 'claude-sonnet-4-5' });
    const err = await c.beta.sessions
      .create({ agent: a.id, environment_id: env.id, vault_ids: ['vlt_nope'] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as any).error.error.message).toContain('vault_ids[0]');
    expect((await c.beta.sessions.list()).data.filter((s) => s.agent.id === a.id)).toEqual([]);
    const vault = await c.beta.vaults.create({ display_name: 'v' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id, vault_ids: [] });
    await c.beta.sessions.update(s.id, { vault_ids: [vault.id] });
    expect((await c.beta.sessions.retrieve(s.id)).vault_ids).toEqual([vault.id]);
  });

  it('user.tool_result on a cloud session: 400 naming events[i].type, nothing appended; system.message is accepted', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'o' });
    const a = await c.beta.agents.create({ name: 'o', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    // user.tool_result answers client-executed toolset calls of self_hosted environments.
    await refused(
      c.beta.sessions.events.send(s.id, {
        events: [
          {
            type: 'user.tool_result',
            tool_use_id: 'sevt_x',
            content: [{ type: 'text', text: 'r' }],
          },
        ],
      }),
      'events[0].type',
    );
    expect((await c.beta.sessions.events.list(s.id)).data).toEqual([]);
    // system.message is built now: accepted after the user.message it accompanies.
    const ok = await t.http(`/v1/sessions/${s.id}/events`, {
      method: 'POST',
      json: {
        events: [
          { type: 'user.message', content: [{ type: 'text', text: 'hi' }] },
          { type: 'system.message', content: [{ type: 'text', text: 'be brief' }] },
        ],
      },
    });
    expect(ok.status).toBe(202);
    expect(((await ok.json()) as any).data.map((e: any) => e.type)).toEqual([
      'user.message',
      'system.message',
    ]);
  });

  it('user.interrupt session_thread_id: one that is no thread of the session is a 400, nothing appended; its primary and null are accepted', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'th' });
    const a = await c.beta.agents.create({ name: 'th', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    const err = await c.beta.sessions.events
      .send(s.id, { events: [{ type: 'user.interrupt', session_thread_id: 'sthr_other' }] } as any)
      .then(
        () => null,
        (e) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as any).error.error.message).toMatch(/^events\[0\]\.session_thread_id: /);
    expect((await c.beta.sessions.events.list(s.id)).data).toEqual([]);
    const primary = (await c.beta.sessions.threads.list(s.id)).data[0]!.id;
    await c.beta.sessions.events.send(s.id, {
      events: [
        { type: 'user.interrupt', session_thread_id: null },
        { type: 'user.interrupt', session_thread_id: primary },
      ],
    } as any);
    const types = (await c.beta.sessions.events.list(s.id)).data.map((e) => e.type);
    expect(types).toEqual(['user.interrupt', 'user.interrupt']);
  });
});

describe('model-card probe', () => {
  it('a custom provider is not probed: {ok: null, reason: unsupported_provider}; a known one is', async () => {
    const create = async (body: Record<string, unknown>) => {
      const r = await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: { base_url: t.model.url, api_key: 'sk-probe', ...body },
      });
      expect(r.status).toBe(200);
      return (await r.json()) as any;
    };
    const custom = await create({
      model_id: 'probe-custom',
      provider: 'custom-llm',
      model: 'probe-custom',
      pi_config: { api: 'openai-completions' },
    });
    expect(custom.probe).toEqual({ ok: null, reason: 'unsupported_provider' });
    const known = await create({ model_id: 'probe-known', provider: 'anthropic', model: 'x' });
    expect(known.probe.ok).not.toBeNull();
    expect(known.probe.reason).not.toBe('unsupported_provider');
  });
});
