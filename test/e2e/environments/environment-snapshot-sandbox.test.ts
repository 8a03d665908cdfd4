/**
 * A session's sandbox runs on the environment snapshot the session started with, end to end
 * (the domain side is test/e2e/environments/environment-lifecycle.test.ts):
 * - an environment update after the session started changes neither the sandbox's env vars nor
 *   the hosts its outbound proxy opens;
 * - when no snapshot can be read (a legacy session whose environment vanished underneath it),
 *   the sandbox fails closed: no request leaves, never the old "unrestricted" default.
 * Real bubblewrap sandbox and outbound proxy, through the official TypeScript SDK.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'env-snapshot-model';

let t: TestPlatform;
let port = 0;
const hits: string[] = [];
const origin = createServer((req, res) => {
  hits.push(`${req.headers.host}${req.url}`);
  res.end('reached');
});

beforeAll(async () => {
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  port = (origin.address() as { port: number }).port;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port},localhost:${port}`,
    },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  origin.closeAllConnections();
  await new Promise<void>((r) => origin.close(() => r()));
});

async function turn(client: Anthropic, sid: string) {
  const { toolResults } = await runTurn(client, sid, 'go');
  return toolResults.map((ev) => ({
    text: (ev.content?.[0]?.text ?? '') as string,
    is_error: !!ev.is_error,
  }));
}

/** Through the session's outbound proxy explicitly (NO_PROXY covers loopback names). */
const probe = (host: string) =>
  `curl -s -m 10 --noproxy '' -x "$HTTP_PROXY" -o /dev/null -w '${host}:%{http_code}\\n' http://${host}:${port}/probe || echo ${host}:failed`;

async function tenantWithModel(name: string) {
  const tenant = await t.newTenant(name);
  await addModelCard(t, MODEL, { key: tenant.apiKey });
  const agent = await tenant.client.beta.agents.create({
    name,
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  return { ...tenant, agent };
}

describe('the sandbox runs on the environment snapshot', () => {
  it('an environment update after the session started changes neither env vars nor open hosts', async () => {
    const { client, apiKey, agent } = await tenantWithModel('env-snap');
    const env = await client.beta.environments.create({
      name: 'env-snap',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['127.0.0.1'] } },
    });
    const set = await t.http(`/v1/environments/${env.id}`, {
      method: 'PATCH',
      key: apiKey,
      json: { env: { MARK: 'before' } },
    });
    expect(set.status).toBe(200);
    const sid = (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
    await client.beta.environments.update(env.id, {
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['localhost'] } },
    });
    await t.http(`/v1/environments/${env.id}`, {
      method: 'PATCH',
      key: apiKey,
      json: { env: { MARK: 'after' } },
    });
    t.model.script(
      MODEL,
      call('bash', { command: `echo "mark:$MARK"; ${probe('127.0.0.1')}; ${probe('localhost')}` }),
      say('done'),
    );
    hits.length = 0;
    const [r] = await turn(client, sid);
    expect(r?.text).toContain('mark:before');
    expect(r?.text).toContain('127.0.0.1:200');
    expect(r?.text).not.toContain('localhost:200');
    expect(hits).toEqual([`127.0.0.1:${port}/probe`]);

    // A new session on the updated environment sees the update.
    const sid2 = (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id }))
      .id;
    t.model.script(
      MODEL,
      call('bash', { command: `echo "mark:$MARK"; ${probe('127.0.0.1')}; ${probe('localhost')}` }),
      say('done'),
    );
    hits.length = 0;
    const [r2] = await turn(client, sid2);
    expect(r2?.text).toContain('mark:after');
    expect(r2?.text).toContain('localhost:200');
    expect(r2?.text).not.toContain('127.0.0.1:200');
    expect(hits).toEqual([`localhost:${port}/probe`]);
  }, 120_000);

  it('no readable snapshot: the sandbox fails closed, nothing leaves', async () => {
    const { tenantId, client, agent } = await tenantWithModel('env-gone');
    const env = await client.beta.environments.create({ name: 'env-gone' });
    const sid = (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
    // A session stored before snapshots existed, whose environment then vanished underneath it
    // (bypassing the API's refusal to delete an environment in use).
    const collections = t.server.platform.collections;
    await collections.sessions.updateOne(tenantId, { _id: sid }, { $unset: { environment: '' } });
    await collections.environments.deleteOne(tenantId, { _id: env.id });
    t.model.script(
      MODEL,
      call('bash', { command: `${probe('127.0.0.1')}; ${probe('localhost')}` }),
      say('done'),
    );
    hits.length = 0;
    const [r] = await turn(client, sid);
    expect(r).toBeDefined();
    expect(r!.text).not.toMatch(/:200/);
    expect(hits).toEqual([]);
  }, 120_000);
});
