import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(async () => {
  await t?.close();
});

const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });

// Cross-tenant access over every route is generated from the route table: test/e2e/auth/tenancy-routes.test.ts.

describe('authentication and errors', () => {
  it('requires a key everywhere but /healthz; x-api-key and Bearer both work', async () => {
    expect(await json(await t.http('/healthz', { key: null }))).toEqual({
      status: 200,
      body: { ok: true },
    });
    const missing = await json(await t.http('/v1/agents', { key: null }));
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ type: 'error', error: { type: 'unauthorized' } });
    expect((await t.http('/v1/agents', { key: 'nope' })).status).toBe(401);
    expect(
      (
        await t.http('/v1/agents', {
          key: null,
          headers: { authorization: `Bearer ${t.operatorKey}` },
        })
      ).status,
    ).toBe(200);
    expect(
      (await t.http('/graphql', { key: null, method: 'POST', json: { query: '{ __typename }' } }))
        .status,
    ).toBe(401);
    const notFound = await json(await t.http('/v1/nothing'));
    expect(notFound).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
  });

  it('revoked keys stop working; only the operator key creates tenants', async () => {
    const a = await t.newTenant('revoke');
    const k = await json(
      await t.http('/v1/svc/api_keys', {
        method: 'POST',
        key: a.apiKey,
        headers: BETA,
        json: { name: 'second' },
      }),
    );
    expect(k.body.key).toMatch(/^afk_/);
    const listed = await json(await t.http('/v1/api_keys', { key: a.apiKey, headers: BETA }));
    expect(JSON.stringify(listed.body)).not.toContain(k.body.key);
    expect((await t.http('/v1/agents', { key: k.body.key })).status).toBe(200);
    await t.http(`/v1/svc/api_keys/${k.body.id}`, {
      method: 'DELETE',
      key: a.apiKey,
      headers: BETA,
    });
    expect((await t.http('/v1/agents', { key: k.body.key })).status).toBe(401);
    const forbidden = await json(
      await t.http('/v1/svc/tenants', {
        method: 'POST',
        key: a.apiKey,
        headers: BETA,
        json: { name: 'x' },
      }),
    );
    expect(forbidden).toMatchObject({ status: 403, body: { error: { type: 'forbidden' } } });
  });

  it('sends rate-limit headers and answers 429 rate_limited past the per-tenant limit', async () => {
    const small = await startPlatform({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const r = await small.http('/v1/agents');
      expect(r.headers.get('x-ratelimit-limit')).toBe('3');
      expect(r.headers.get('x-ratelimit-remaining')).toBe('2');
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
      await small.http('/v1/agents');
      await small.http('/v1/agents');
      const limited = await json(await small.http('/v1/agents'));
      expect(limited).toMatchObject({ status: 429, body: { error: { type: 'rate_limited' } } });
    } finally {
      await small.close();
    }
  });
});

describe('model cards', () => {
  it('encrypts the key, shows only the last 4, probes loudly, rotates and deletes', async () => {
    const created = await json(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'card-1',
          provider: 'ant',
          model: 'wire-1',
          base_url: t.model.url,
          api_key: 'sk-secret-value-1234',
        },
      }),
    );
    expect(created.status).toBe(200);
    expect(created.body.api_key_preview).toBe('…1234');
    expect(created.body.probe.ok).toBe(true);
    expect(JSON.stringify(created.body)).not.toContain('sk-secret-value');
    const list = await json(await t.http('/v1/model_cards', { headers: BETA }));
    expect(JSON.stringify(list.body)).not.toContain('sk-secret-value');
    expect(list.body.data.map((c: any) => c.model_id)).toContain('card-1');
    const dup = await json(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'card-1',
          provider: 'ant',
          model: 'w',
          base_url: t.model.url,
          api_key: 'sk-2',
        },
      }),
    );
    expect(dup.status).toBe(409);
    const badKey = await json(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'card-bad',
          provider: 'anthropic',
          model: 'w',
          base_url: t.model.url,
          api_key: 'sk-bad',
        },
      }),
    );
    expect(badKey.status).toBe(400);
    expect(badKey.body.error.message).toMatch(/api_key: rejected/);
    const custom = await json(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'card-c',
          provider: 'my-llm',
          model: 'w',
          base_url: t.model.url,
          api_key: 'sk-3',
        },
      }),
    );
    expect(custom.body.error.message).toMatch(/pi_config\.api/);
    const rotated = await json(
      await t.http(`/v1/svc/model_cards/${created.body.id}`, {
        method: 'POST',
        headers: BETA,
        json: { api_key: 'sk-rotated-9876' },
      }),
    );
    expect(rotated.body.api_key_preview).toBe('…9876');
    // The plaintext key is nowhere on disk.
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        statSync(p).isDirectory() ? walk(p) : files.push(p);
      }
    };
    await waitFor(async () => true);
    walk(t.dataDir);
    for (const f of files)
      expect(readFileSync(f, 'utf8'), f).not.toMatch(/sk-secret-value-1234|sk-rotated-9876/);
    // Turns use the rotated key.
    const agent = await t.client.beta.agents.create({ name: 'carded', model: 'card-1' });
    const env = await t.client.beta.environments.create({ name: 'c' });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await t.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    });
    await waitFor(async () => t.model.requests.some((r) => r.model === 'wire-1'));
    expect(t.model.requests.find((r) => r.model === 'wire-1')!.headers['x-api-key']).toBe(
      'sk-rotated-9876',
    );
    const models = await t.client.beta.models.list();
    expect(models.data.map((m) => m.id)).toContain('card-1');
    expect(
      (
        await json(
          await t.http(`/v1/svc/model_cards/${created.body.id}`, {
            method: 'DELETE',
            headers: BETA,
          }),
        )
      ).status,
    ).toBe(200);
  });
});

describe('shutdown', () => {
  it('closes promptly while REST SSE streams are open', async () => {
    const p = await startPlatform();
    const env = await p.client.beta.environments.create({ name: 's' });
    const agent = await p.client.beta.agents.create({ name: 's', model: 'claude-sonnet-4-5' });
    const s = await p.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const res = await p.http(`/v1/sessions/${s.id}/events/stream`);
    expect(res.status).toBe(200);
    const reading = res.text().catch(() => 'aborted');
    const closed = await Promise.race([
      p.close().then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('hung'), 10_000)),
    ]);
    expect(closed).toBe('closed');
    await reading;
  });
});

describe('secrets never served', () => {
  it('MCP authorization tokens from agents, session overrides and session updates are sealed, never returned', async () => {
    const env = await t.client.beta.environments.create({ name: 'mcp' });
    const agent = await json(
      await t.http('/v1/agents', {
        method: 'POST',
        json: {
          name: 'mcp',
          model: 'claude-sonnet-4-5',
          tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }],
          mcp_servers: [
            {
              name: 'gh',
              type: 'url',
              url: 'https://mcp.example.com/sse',
              authorization_token: 'AGENT-TOKEN-1',
            },
          ],
        },
      }),
    );
    expect(JSON.stringify(agent.body)).not.toContain('AGENT-TOKEN-1');
    const s = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: {
          agent: {
            type: 'agent_with_overrides',
            id: agent.body.id,
            mcp_servers: [
              {
                name: 'gh',
                type: 'url',
                url: 'https://mcp.example.com/sse',
                authorization_token: 'OVERRIDE-TOKEN-2',
              },
            ],
          },
          environment_id: env.id,
        },
      }),
    );
    expect(s.status).toBe(200);
    const upd = await json(
      await t.http(`/v1/sessions/${s.body.id}`, {
        method: 'POST',
        json: {
          agent: {
            tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh2' }],
            mcp_servers: [
              {
                name: 'gh2',
                type: 'url',
                url: 'https://mcp2.example.com/sse',
                authorization_token: 'UPDATE-TOKEN-3',
              },
            ],
          },
        },
      }),
    );
    expect(upd.status).toBe(200);
    const got = await json(await t.http(`/v1/sessions/${s.body.id}`));
    const list = await json(await t.http('/v1/sessions?limit=1000'));
    for (const body of [s.body, upd.body, got.body, list.body])
      expect(JSON.stringify(body)).not.toMatch(/AGENT-TOKEN-1|OVERRIDE-TOKEN-2|UPDATE-TOKEN-3/);
    expect(got.body.agent.mcp_servers).toEqual([
      {
        name: 'gh2',
        type: 'url',
        url: 'https://mcp2.example.com/sse',
        has_authorization_token: true,
      },
    ]);
  });
});
