/**
 * MCP server authorization tokens (agent `mcp_servers[].authorization_token`, type url), through
 * the SDK and HTTP against an in-process platform:
 * - sealed at rest (AES-256-GCM under the root secret; the data dir never holds the token in
 *   clear) and never served: responses carry `has_authorization_token: true` instead, which the
 *   SDK's `BetaManagedAgentsMCPServerURLDefinition` ({name, type, url}) tolerates as an extra field;
 * - the served object sent back (SDK round trip: `mcp_servers: agent.mcp_servers`) keeps the
 *   stored token of the server with the same name and url; a changed url never takes it along;
 *   `has_authorization_token: false` removes it; `true` with nothing stored is a 400 naming the field;
 * - the same for a session's agent overrides (create and update).
 * The secrets scan (test/e2e/credentials/secrets-scan.test.ts) searches every response, event, log line and file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL, realAdapterEnv, startPlatform, type TestPlatform } from '../../kit/harness.js';

const TOKEN = `mcp-token-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const URL_A = 'https://mcp.example.com/sse';

let t: TestPlatform;
// On the real adapters the documents live in MongoDB, not in the data dir: the test names the
// platform's database so it can read every stored document raw.
const realEnv = REAL ? realAdapterEnv() : {};
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', ...realEnv } });
});
afterAll(async () => {
  await t?.close();
});

const toolset = (name: string) => ({ type: 'mcp_toolset' as const, mcp_server_name: name });

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });

describe('MCP server authorization tokens', () => {
  it('are sealed, never served, and survive the SDK round trip of the served servers', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'mcp',
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ name: 'a', type: 'url', url: URL_A, authorization_token: TOKEN }],
      tools: [toolset('a')],
    } as any);
    expect(agent.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
    ]);
    expect(JSON.stringify(agent)).not.toContain(TOKEN);

    // Send back what was served, plus a second server: the first keeps its token.
    const v2 = await t.client.beta.agents.update(agent.id, {
      version: agent.version,
      mcp_servers: [
        ...agent.mcp_servers,
        { name: 'b', type: 'url', url: 'https://b.example.com/sse' },
      ],
      tools: [toolset('a'), toolset('b')],
    } as any);
    expect(v2.version).toBe(2);
    expect(v2.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
      { name: 'b', type: 'url', url: 'https://b.example.com/sse' },
    ]);
    // Without the flag (the SDK param shape {name, type, url}) it is kept as well.
    const v3 = await t.client.beta.agents.update(agent.id, {
      version: v2.version,
      description: 'd',
      mcp_servers: [{ name: 'a', type: 'url', url: URL_A }],
      tools: [toolset('a')],
    });
    expect(v3.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
    ]);

    // A changed url does not take the token to the new host; `true` with nothing stored is refused.
    const moved = await t.http(`/v1/agents/${agent.id}`, {
      method: 'POST',
      json: {
        mcp_servers: [
          {
            name: 'a',
            type: 'url',
            url: 'https://elsewhere.example.com/sse',
            has_authorization_token: true,
          },
        ],
      },
    });
    expect(moved.status).toBe(400);
    const err = (await moved.json()) as any;
    expect(err.error.message).toMatch(/mcp_servers\[0\]\.has_authorization_token/);
    const v4 = await t.client.beta.agents.update(agent.id, {
      version: v3.version,
      mcp_servers: [{ name: 'a', type: 'url', url: 'https://elsewhere.example.com/sse' }],
    });
    expect(v4.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: 'https://elsewhere.example.com/sse' },
    ]);

    // Older versions keep theirs; `false` removes it.
    expect((await t.client.beta.agents.retrieve(agent.id, { version: 3 })).mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
    ]);
    const v5 = await t.client.beta.agents.update(agent.id, {
      version: v4.version,
      mcp_servers: [{ name: 'a', type: 'url', url: URL_A, authorization_token: TOKEN }],
    } as any);
    expect(v5.mcp_servers[0]).toMatchObject({ has_authorization_token: true });
    const v6 = await t.client.beta.agents.update(agent.id, {
      version: v5.version,
      mcp_servers: [{ name: 'a', type: 'url', url: URL_A, has_authorization_token: false }],
    } as any);
    expect(v6.mcp_servers).toEqual([{ name: 'a', type: 'url', url: URL_A }]);
  });

  it("session agent overrides keep the agent's token for the same server and refuse a flag with nothing stored", async () => {
    const env = await t.client.beta.environments.create({ name: 'mcp-env' });
    const agent = await t.client.beta.agents.create({
      name: 'mcp-s',
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ name: 'a', type: 'url', url: URL_A, authorization_token: TOKEN }],
      tools: [toolset('a')],
    } as any);
    const s = await t.client.beta.sessions.create({
      agent: { type: 'agent_with_overrides', id: agent.id, mcp_servers: agent.mcp_servers },
      environment_id: env.id,
    } as any);
    expect(s.agent.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
    ]);
    const bad = await t.http(`/v1/sessions/${s.id}`, {
      method: 'POST',
      json: {
        agent: {
          mcp_servers: [{ name: 'z', type: 'url', url: URL_A, has_authorization_token: true }],
        },
      },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toMatch(
      /agent\.mcp_servers\[0\]\.has_authorization_token/,
    );
    const kept = await t.http(`/v1/sessions/${s.id}`, {
      method: 'POST',
      json: { agent: { mcp_servers: [{ name: 'a', type: 'url', url: URL_A }] } },
    });
    expect(((await kept.json()) as any).agent.mcp_servers).toEqual([
      { name: 'a', type: 'url', url: URL_A, has_authorization_token: true },
    ]);
  });

  it('the store never holds the token in clear', async () => {
    // Every write so far is in the store (the embedded store's log under the data dir, or the
    // MongoDB database of this platform); the token was sent several times.
    const stored: Array<{ where: string; bytes: Buffer }> = filesUnder(t.dataDir).map((f) => ({
      where: f.slice(t.dataDir.length),
      bytes: readFileSync(f),
    }));
    if (REAL) {
      const client = await MongoClient.connect(realEnv.MONGODB_URL!);
      try {
        const db = client.db();
        for (const c of await db.listCollections().toArray()) {
          const docs = await db.collection(c.name).find({}).toArray();
          stored.push({ where: `mongodb:${c.name}`, bytes: Buffer.from(JSON.stringify(docs)) });
        }
      } finally {
        await client.close();
      }
    }
    expect(stored.some((s) => s.bytes.includes('authorization_token_sealed'))).toBe(true);
    expect(stored.filter((s) => s.bytes.includes(TOKEN)).map((s) => s.where)).toEqual([]);
  });
});
