/**
 * A turn's MCP tool call with a vault mcp_oauth credential whose access token has expired
 * upstream, through the official TypeScript SDK, the scripted model, a real MCP server of ours
 * and a real token endpoint of ours that rotates tokens (test/kit/fixtures/oauthServer.ts):
 * - the server answers 401, the MCP proxy refreshes (spec "MCP proxy 401 flow") and retries:
 *   the turn's discovery and call succeed with the new token, no session.error;
 * - the refresh fails: the turn gets session.error mcp_authentication_failed_error for that
 *   server, offers none of its tools and still ends normally;
 * - no access or refresh token appears in any event or model request.
 * Proves workers/src/tools/mcp.ts with core/src/mcp/proxy.ts's refresh flow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startMcpServer, type McpServerFixture } from '../../kit/fixtures/mcpServer.js';
import { startOAuthServer, type OAuthServerFixture } from '../../kit/fixtures/oauthServer.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'mcp-oauth-turn-model';
const rnd = () => Math.random().toString(36).slice(2, 12);

let t: TestPlatform;
const fixtures: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', EGRESS_ALLOW_PRIVATE_HOSTS: '127.0.0.1' },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await Promise.all(fixtures.map((f) => f.close()));
});

/** A session whose vault holds an mcp_oauth credential with a stale access token. */
async function staleOAuthSession(): Promise<{
  sid: string;
  client: TestPlatform['client'];
  oauth: OAuthServerFixture;
  mcp: McpServerFixture;
  secrets: () => string[];
}> {
  const rt0 = `refresh-0-${rnd()}${rnd()}`;
  const stale = `stale-access-${rnd()}${rnd()}`;
  const oauth = await startOAuthServer({ auth: 'none', clientId: 'cid', refreshToken: rt0 });
  const mcp = await startMcpServer({ tokens: [`never-issued-${rnd()}`] });
  fixtures.push(oauth, mcp);
  oauth.onIssue = (a) => mcp.tokens.add(a);
  const { client } = await t.newTenant(`oauth-turn-${rnd()}`);
  const v = await client.beta.vaults.create({ display_name: 'oauth-turn' });
  await client.beta.vaults.credentials.create(v.id, {
    auth: {
      type: 'mcp_oauth',
      access_token: stale,
      mcp_server_url: mcp.url,
      refresh: {
        client_id: 'cid',
        refresh_token: rt0,
        token_endpoint: oauth.url,
        token_endpoint_auth: { type: 'none' },
      },
    },
  } as any);
  const env = await client.beta.environments.create({ name: `oauth-turn-${rnd()}` });
  const agent = await client.beta.agents.create({
    name: 'oauth-turn',
    model: MODEL,
    mcp_servers: [{ type: 'url', name: 'srv', url: mcp.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'srv' }],
  } as any);
  const s = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    vault_ids: [v.id],
  } as any);
  const secrets = () => [stale, rt0, ...oauth.issued, ...oauth.refreshTokens];
  return { sid: s.id, client, oauth, mcp, secrets };
}

const noSecret = (text: string, secrets: string[]) => {
  for (const s of secrets) expect(text).not.toContain(s);
};

describe('MCP tools in a turn: vault mcp_oauth refresh', () => {
  it('an expired access token is refreshed by the proxy and the call succeeds', async () => {
    const { sid, client, oauth, mcp, secrets } = await staleOAuthSession();
    t.model.script(MODEL, call('mcp__srv__echo', { text: 'fresh' }), say('refreshed'));
    const turn = await runTurn(client, sid, 'echo');
    expect(turn.events.filter((e) => e.type === 'session.error')).toEqual([]);
    expect(turn.events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      content: [{ type: 'text', text: 'echo: fresh' }],
      is_error: false,
    });
    expect(oauth.issued.length).toBeGreaterThan(0);
    expect(mcp.seen.at(-1)?.authorization).toBe(`Bearer ${oauth.issued.at(-1)}`);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
    noSecret(JSON.stringify(turn.events), secrets());
    noSecret(JSON.stringify((await client.beta.sessions.events.list(sid)).data), secrets());
    noSecret(JSON.stringify(t.model.requests), secrets());
  });

  it('a failed refresh: mcp_authentication_failed_error, no tools of that server, the turn ends', async () => {
    const { sid, client, oauth, secrets } = await staleOAuthSession();
    oauth.failNext(10);
    t.model.script(MODEL, say('without srv'));
    const before = t.model.requests.filter((r) => r.model === MODEL).length;
    const turn = await runTurn(client, sid, 'echo');
    const err = turn.events.find((e) => e.type === 'session.error');
    expect(err.error).toMatchObject({
      type: 'mcp_authentication_failed_error',
      mcp_server_name: 'srv',
      retry_status: { type: 'retrying' },
    });
    const req = t.model.requests.filter((r) => r.model === MODEL)[before]!;
    expect(req.body.tools ?? []).toEqual([]);
    expect(turn.idle.stop_reason).toEqual({ type: 'end_turn' });
    noSecret(JSON.stringify(turn.events), secrets());
  });
});
