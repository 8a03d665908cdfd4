/**
 * Every webhook event type the platform emits (WEBHOOK_EVENT_TYPES), each triggered through the
 * public API (the official TypeScript SDK, HTTP where the SDK has no method) and received on
 * 127.0.0.1 by receivers that verify every request with the SDK's `client.beta.webhooks.unwrap`
 * under the endpoint's own secret (test/kit/fixtures/webhookReceiver.ts). Proves:
 * - each type arrives, unwrapped, with the SDK's `data` shape (`{id, type, organization_id,
 *   workspace_id}`, plus `vault_id` for credentials) naming the object the action changed;
 * - an endpoint's filter accepts every emitted type, delivers only the named ones, and still
 *   refuses types the platform does not emit (the SDK's others, and made-up ones);
 * - refused and no-op changes emit nothing (a 409 delete, a second archive or pause);
 * - an endpoint gets only its own tenant's events.
 * `session.status_rescheduled` is the one type not reachable through the API: the recovery scan
 * appends it when a worker dies mid-turn (test/e2e/turns/rescheduling.test.ts, real processes); here the
 * event is appended through the event log as that scan does. Bounded: receivers wait ≤ 20 s.
 */
import type { BetaWebhookEventData } from '@anthropic-ai/sdk/resources/beta/webhooks';
import { WEBHOOK_EVENT_TYPES, type WebhookEventName } from '@agentfleet/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../kit/fixtures/webhookReceiver.js';
import { startMcpServer } from '../../kit/fixtures/mcpServer.js';
import { startOAuthServer } from '../../kit/fixtures/oauthServer.js';
import { runTurn, untilIdle } from '../../kit/turnHelpers.js';

/** Compile-time: every emitted type is one of the SDK's BetaWebhookEventData types. */
export type EmittedAreSdk = WebhookEventName extends BetaWebhookEventData['type'] ? true : never;
const emittedAreSdk: EmittedAreSdk = true;
void emittedAreSdk;

const MODEL = 'claude-sonnet-4-5'; // the fallback vendor: scripted by t.model, priced from the list
let t: TestPlatform;
const closers: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', WEBHOOK_SCAN_MS: '0', EGRESS_ALLOW_PRIVATE_HOSTS: '127.0.0.1' },
  });
});
afterAll(async () => {
  await t?.close();
  for (const c of closers) await c.close();
});

type Tenant = Awaited<ReturnType<TestPlatform['newTenant']>>;

async function endpoint(a: Tenant, body: Record<string, unknown>) {
  return t.http('/v1/svc/webhook_endpoints', {
    method: 'POST',
    key: a.apiKey,
    headers: BETA,
    json: body,
  });
}

async function receiverFor(a: Tenant, eventTypes?: readonly string[]): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver();
  closers.push(r);
  const res = await endpoint(a, { url: r.url, ...(eventTypes ? { event_types: eventTypes } : {}) });
  expect(res.status, await res.clone().text()).toBe(200);
  r.key = ((await res.json()) as { secret: string }).secret;
  return r;
}

const pairs = (r: WebhookReceiver) =>
  r.received.map((x) => `${x.event?.data.type} ${x.event?.data.id}`);

/** Waits until every `[type, id]` arrived at `r` (bounded), then answers the pairs seen. */
async function arrived(r: WebhookReceiver, want: Array<[WebhookEventName, string]>) {
  const keys = want.map(([type, id]) => `${type} ${id}`);
  try {
    await waitFor(async () => keys.every((k) => pairs(r).includes(k)), 20_000);
  } catch {
    throw new Error(`missing: ${keys.filter((k) => !pairs(r).includes(k)).join(', ')}`);
  }
  return pairs(r);
}

describe('webhook event types', () => {
  it(
    'every emitted type arrives, unwrapped, with the SDK data shape; filters; tenants apart',
    { timeout: 90_000 },
    async () => {
      const a = await t.newTenant('types-a');
      const b = await t.newTenant('types-b');
      // The filter names every emitted type; types not emitted are refused, naming the entry.
      const all = await receiverFor(a, WEBHOOK_EVENT_TYPES);
      const few = await receiverFor(a, ['agent.created', 'memory_store.deleted']);
      const other = await receiverFor(b);
      for (const bad of [
        'user_profile.program_status_updated',
        'agent.deleted',
        'skill.created',
        'nope',
      ]) {
        const res = await endpoint(a, { url: all.url, event_types: ['agent.created', bad] });
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error.message).toContain('event_types[1]');
      }
      const c = a.client;
      const want: Array<[WebhookEventName, string]> = [];

      // Environments
      const env = await c.beta.environments.create({ name: 'types-env' });
      await c.beta.environments.update(env.id, { name: 'types-env-2' });
      const envArchived = await c.beta.environments.create({ name: 'to-archive' });
      await c.beta.environments.archive(envArchived.id);
      await c.beta.environments.archive(envArchived.id); // no-op: nothing more
      const envDeleted = await c.beta.environments.create({ name: 'to-delete' });
      await c.beta.environments.delete(envDeleted.id);
      want.push(
        ['environment.created', env.id],
        ['environment.updated', env.id],
        ['environment.archived', envArchived.id],
        ['environment.deleted', envDeleted.id],
      );

      // Agents
      const tool = {
        type: 'custom' as const,
        name: 'lookup',
        description: 'looks things up',
        input_schema: { type: 'object' as const },
      };
      const agent = await c.beta.agents.create({
        name: 'types-agent',
        model: MODEL,
        tools: [tool],
      });
      await c.beta.agents.update(agent.id, { version: agent.version, description: 'changed' });
      const agentArchived = await c.beta.agents.create({ name: 'to-archive', model: MODEL });
      await c.beta.agents.archive(agentArchived.id);
      await c.beta.agents.archive(agentArchived.id); // no-op
      want.push(
        ['agent.created', agent.id],
        ['agent.updated', agent.id],
        ['agent.archived', agentArchived.id],
      );

      // Sessions: lifecycle and the state of turns
      const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
      await c.beta.sessions.update(s.id, { title: 'retitled' });
      t.model.script(MODEL, { steps: [{ text: 'hello' }] });
      expect((await runTurn(c, s.id, 'hi')).idle.stop_reason).toEqual({ type: 'end_turn' });
      t.model.script(MODEL, { steps: [{ tool_use: { name: 'lookup', input: {} } }] });
      expect((await runTurn(c, s.id, 'look')).idle.stop_reason.type).toBe('requires_action');
      // The scan's rescheduling, as the recovery scan writes it (see the header).
      await t.server.platform.events.append(a.tenantId, s.id, [
        { type: 'session.status_rescheduled', payload: {} },
      ]);
      const spender = await c.beta.agents.create({ name: 'spender', model: MODEL });
      const budgeted = await c.beta.sessions.create({
        agent: spender.id,
        environment_id: env.id,
        budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } },
      });
      t.model.script(MODEL, { steps: [{ text: 'spent' }], usage: { input_tokens: 1_000_000 } });
      await runTurn(c, budgeted.id, 'spend');
      expect((await runTurn(c, budgeted.id, 'more')).idle.stop_reason).toEqual({
        type: 'budget_reached',
      });
      // An outcome's evaluation cycle ends: session.outcome_evaluation_ended.
      const judged = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
      t.model.script(
        MODEL,
        { steps: [{ text: 'done' }] },
        { steps: [{ text: '{"result": "satisfied", "explanation": "ok"}' }] },
      );
      const outcome = await untilIdle(c, judged.id, [
        {
          type: 'user.define_outcome',
          description: 'say done',
          rubric: { type: 'text', content: 'it says done' },
        },
      ]);
      expect(outcome.find((e: any) => e.type === 'span.outcome_evaluation_end')?.result).toBe(
        'satisfied',
      );
      // Refused (409: a session runs on it): no environment.deleted for env.
      await expect(c.beta.environments.delete(env.id)).rejects.toMatchObject({ status: 409 });
      await c.beta.sessions.archive(s.id);
      await c.beta.sessions.archive(s.id); // no-op
      await c.beta.sessions.delete(s.id);
      want.push(
        ['session.created', s.id],
        ['session.updated', s.id],
        ['session.running', s.id],
        ['session.idled', s.id],
        ['session.status_idled', s.id],
        ['session.requires_action', s.id],
        ['session.status_rescheduled', s.id],
        ['session.budget_reached', budgeted.id],
        ['session.outcome_evaluation_ended', judged.id],
        ['session.archived', s.id],
        ['session.status_terminated', s.id],
        ['session.deleted', s.id],
      );
      // A coordinator's thread: created, idled (its reply delivered), terminated with its session.
      const worker = await c.beta.agents.create({ name: 'types-worker', model: MODEL });
      const lead = await c.beta.agents.create({
        name: 'types-lead',
        model: MODEL,
        multiagent: { type: 'coordinator', agents: [worker.id] },
      });
      const threaded = await c.beta.sessions.create({ agent: lead.id, environment_id: env.id });
      // One queue for both models: every answer after the start is plain text, in any order.
      t.model.script(
        MODEL,
        {
          steps: [
            {
              tool_use: { name: 'start_thread', input: { agent_name: 'types-worker', task: 't' } },
            },
          ],
        },
        { steps: [{ text: 'a' }] },
        { steps: [{ text: 'b' }] },
        { steps: [{ text: 'c' }] },
      );
      expect((await runTurn(c, threaded.id, 'delegate')).idle.stop_reason).toEqual({
        type: 'end_turn',
      });
      await c.beta.sessions.delete(threaded.id);
      want.push(
        ['session.thread_created', threaded.id],
        ['session.thread_idled', threaded.id],
        ['session.thread_terminated', threaded.id],
      );
      const selfHosted = await c.beta.environments.create({
        name: 'sh',
        config: { type: 'self_hosted' },
      });
      const plain = await c.beta.agents.create({ name: 'sh-agent', model: MODEL });
      const woken = await c.beta.sessions.create({
        agent: plain.id,
        environment_id: selfHosted.id,
      });
      want.push(['session.status_run_started', woken.id]);

      // Deployments and their runs
      const hello = [
        { type: 'user.message' as const, content: [{ type: 'text' as const, text: 'hi' }] },
      ];
      const dep = await c.beta.deployments.create({
        name: 'types-dep',
        agent: plain.id,
        environment_id: env.id,
        initial_events: hello,
      });
      await c.beta.deployments.update(dep.id, { description: 'changed' });
      await c.beta.deployments.pause(dep.id);
      await c.beta.deployments.pause(dep.id); // no-op
      await c.beta.deployments.unpause(dep.id);
      const good = await c.beta.deployments.run(dep.id);
      await c.beta.deployments.archive(dep.id);
      const gone = await c.beta.vaults.create({ display_name: 'soon gone' });
      const bad = await c.beta.deployments.create({
        name: 'types-bad',
        agent: plain.id,
        environment_id: env.id,
        initial_events: hello,
        vault_ids: [gone.id],
      });
      await c.beta.vaults.delete(gone.id);
      const failed = await c.beta.deployments.run(bad.id);
      expect(failed.error).toBeTruthy();
      want.push(
        ['deployment.created', dep.id],
        ['deployment.updated', dep.id],
        ['deployment.paused', dep.id],
        ['deployment.unpaused', dep.id],
        ['deployment.archived', dep.id],
        ['deployment_run.started', good.id],
        ['deployment_run.succeeded', good.id],
        ['deployment_run.failed', failed.id],
      );

      // Vaults and credentials; a refresh that fails (mcp_oauth_validate against 127.0.0.1)
      const mcp = await startMcpServer({ tokens: ['good-token'] });
      const oauth = await startOAuthServer({ auth: 'none', clientId: 'cid', refreshToken: 'rt-1' });
      closers.push(mcp, oauth);
      oauth.failNext(1);
      const vault = await c.beta.vaults.create({ display_name: 'types-vault' });
      const cred = await c.beta.vaults.credentials.create(vault.id, {
        auth: {
          type: 'mcp_oauth',
          access_token: 'stale-token',
          mcp_server_url: mcp.url,
          refresh: {
            client_id: 'cid',
            refresh_token: 'rt-1',
            token_endpoint: oauth.url,
            token_endpoint_auth: { type: 'none' },
          },
        },
      });
      const check = await c.beta.vaults.credentials.mcpOAuthValidate(cred.id, {
        vault_id: vault.id,
      });
      expect(check.refresh?.status).toBe('failed');
      await c.beta.vaults.credentials.archive(cred.id, { vault_id: vault.id });
      await c.beta.vaults.credentials.delete(cred.id, { vault_id: vault.id });
      await c.beta.vaults.archive(vault.id);
      await c.beta.vaults.delete(vault.id);
      want.push(
        ['vault.created', vault.id],
        ['vault_credential.created', cred.id],
        ['vault_credential.refresh_failed', cred.id],
        ['vault_credential.archived', cred.id],
        ['vault_credential.deleted', cred.id],
        ['vault.archived', vault.id],
        ['vault.deleted', vault.id],
      );

      // Memory stores
      const store = await c.beta.memoryStores.create({ name: 'types-store' });
      await c.beta.memoryStores.archive(store.id);
      const storeDeleted = await c.beta.memoryStores.create({ name: 'to-delete' });
      await c.beta.memoryStores.delete(storeDeleted.id);
      want.push(
        ['memory_store.created', store.id],
        ['memory_store.archived', store.id],
        ['memory_store.deleted', storeDeleted.id],
      );

      // Another tenant's action reaches only its own endpoint.
      const theirs = await b.client.beta.agents.create({ name: 'theirs', model: MODEL });

      expect(new Set(want.map(([type]) => type))).toEqual(new Set(WEBHOOK_EVENT_TYPES));
      const seen = await arrived(all, want);
      for (const x of all.received) {
        expect(x.verifyError).toBeNull();
        const data = x.event!.data as unknown as Record<string, unknown>;
        expect(data).toMatchObject({ organization_id: a.tenantId, workspace_id: a.tenantId });
        const keys = ['id', 'organization_id', 'type', 'workspace_id'];
        if (String(data.type).startsWith('vault_credential.')) {
          keys.push('vault_id');
          expect(data.vault_id).toBe(vault.id);
        }
        if (String(data.type).startsWith('session.thread_')) {
          keys.push('session_thread_id');
          expect(data.session_thread_id).toMatch(/^sthr_/);
        }
        for (const k of keys) expect(typeof data[k], `${data.type}.${k}`).toBe('string');
        // The SDK's fields only, but for the run's deployment and the wake-hint's Work item.
        const extra = Object.keys(data).filter((k) => !keys.includes(k));
        expect(extra.every((k) => ['deployment_id', 'environment_id', 'work_id'].includes(k))).toBe(
          true,
        );
      }
      // Refused and no-op changes emitted nothing.
      const count = (k: string) => seen.filter((p) => p === k).length;
      expect(count(`environment.deleted ${env.id}`)).toBe(0);
      for (const k of [
        `environment.archived ${envArchived.id}`,
        `agent.archived ${agentArchived.id}`,
        `session.archived ${s.id}`,
        `deployment.paused ${dep.id}`,
      ])
        expect(count(k), k).toBe(1);
      // The filtered endpoint got exactly its two types; the other tenant only its own agent.
      const fewWant = [
        `agent.created ${agent.id}`,
        `memory_store.deleted ${storeDeleted.id}`,
        ...seen.filter((p) => p.startsWith('agent.created ') && p !== `agent.created ${agent.id}`),
      ];
      await few.waitFor(fewWant.length, 20_000);
      expect(pairs(few).sort()).toEqual(fewWant.sort());
      await other.waitFor(1, 20_000);
      expect(pairs(other)).toEqual([`agent.created ${theirs.id}`]);
      expect(seen).not.toContain(`agent.created ${theirs.id}`);
    },
  );
});
