/**
 * Environment networking, enforced by each session's outbound proxy (core/src/egress/proxy/policy.ts
 * sessionHostPolicy), seen from a real bwrap sandbox (local driver) through the TypeScript SDK:
 * the scripted model has the agent run `curl` through the sandbox's proxy.
 * - `limited` + `allowed_hosts`: the listed name is reached; another name is refused with the
 *   proxy's 403 and its server sees no request.
 * - `allow_mcp_servers: true` opens the host of the agent's MCP server URL; false keeps it shut.
 * - `allow_package_managers: true` opens the package registries (a real HTTPS request to pypi.org
 *   through the proxy); without it pypi.org is refused.
 * - the spec's top-level `network`: `allowlist` restricts, `denylist` wins over it.
 * - `packages` under `limited` networking need `allow_package_managers: true` (SDK rule): 400.
 * - a spec `network` update naming only a denylist keeps a limited environment limited.
 * Test hosts: loopback servers on 127.0.0.1 (named `localhost`), 127.0.0.2 (the MCP server) and
 * 127.0.0.3 (never allowed). The operator opens exactly those ports (EGRESS_ALLOW_PRIVATE_HOSTS),
 * so what is refused is refused by the environment's policy, not by the private-address rule.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'net-model';

/** A loopback HTTP server on `host` that counts its requests. */
async function origin(host: string, body: string) {
  const s = { hits: 0, port: 0, server: null as unknown as Server };
  s.server = createServer((_req, res) => {
    s.hits++;
    res.end(body);
  });
  await new Promise<void>((r) => s.server.listen(0, host, () => r()));
  s.port = (s.server.address() as { port: number }).port;
  return s;
}

let t: TestPlatform;
let allowed: Awaited<ReturnType<typeof origin>>;
let mcp: Awaited<ReturnType<typeof origin>>;
let other: Awaited<ReturnType<typeof origin>>;

beforeAll(async () => {
  allowed = await origin('127.0.0.1', 'allowed-origin');
  mcp = await origin('127.0.0.2', 'mcp-origin');
  other = await origin('127.0.0.3', 'other-origin');
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: [
        `127.0.0.1:${allowed.port}`,
        `127.0.0.2:${mcp.port}`,
        `127.0.0.3:${other.port}`,
        // Some resolvers (this CI's among them) answer pypi.org with a reserved address; the
        // operator opens it so that only the environment's policy decides below.
        'pypi.org:443',
      ].join(','),
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  for (const s of [allowed, mcp, other]) s?.server.close();
});

/**
 * A session on a new environment with the SDK's `networking` (or the spec's top-level `network`
 * when `networking` is null), its agent with `mcpUrl` as MCP server.
 */
async function sessionWith(
  networking: Record<string, unknown> | null,
  mcpUrl?: string,
  network?: { allowlist?: string[]; denylist?: string[] },
) {
  const env = await t.client.beta.environments.create({
    name: `net-${Math.random().toString(36).slice(2, 8)}`,
    ...(networking ? { config: { type: 'cloud', networking: networking as any } } : {}),
    ...(network ? ({ network } as any) : {}),
  });
  const agent = await t.client.beta.agents.create({
    name: 'net',
    model: MODEL,
    tools: [
      { type: 'agent_toolset_20260401' },
      // Every server needs its toolset (SDK); all tools off, so turns never connect it and
      // only the sandbox's curl reaches that host.
      ...(mcpUrl
        ? [
            {
              type: 'mcp_toolset' as const,
              mcp_server_name: 'tools',
              default_config: { enabled: false },
            },
          ]
        : []),
    ],
    ...(mcpUrl ? { mcp_servers: [{ type: 'url', name: 'tools', url: mcpUrl }] } : {}),
  });
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
}

/** Runs `command` with the bash tool in the session's sandbox; its tool result text. */
async function bash(sid: string, command: string): Promise<string> {
  t.model.script(MODEL, call('bash', { command }), say('done'));
  const { toolResults } = await runTurn(t.client, sid, 'run it');
  const results: string[] = toolResults.map((ev) => ev.content[0].text);
  expect(results).toHaveLength(1);
  return results[0]!;
}

/**
 * curl through the sandbox's proxy (NO_PROXY lists loopback names, so it is overridden): prints
 * the URL, the response status and the proxy's answer to CONNECT (000 when there was none).
 */
const fetchCmd = (url: string) =>
  `curl -s --max-time 20 --noproxy '' -x "$HTTP_PROXY" -o /dev/null -w '${url} %{http_code} connect=%{http_connect}\\n' '${url}'; echo "exit=$?"`;

describe('environment networking through the session proxy (local driver)', () => {
  it('limited: allowed_hosts is reached, any other host is refused before it is contacted', async () => {
    const sid = await sessionWith({ type: 'limited', allowed_hosts: ['localhost'] });
    const out = await bash(
      sid,
      [
        fetchCmd(`http://localhost:${allowed.port}/`),
        fetchCmd(`http://127.0.0.3:${other.port}/`),
      ].join('; '),
    );
    expect(out).toContain(`http://localhost:${allowed.port}/ 200 connect=000`);
    expect(out).toContain(`http://127.0.0.3:${other.port}/ 403 connect=000`);
    expect(allowed.hits).toBeGreaterThan(0);
    expect(other.hits).toBe(0);
  }, 60_000);

  it("allow_mcp_servers opens the agent's MCP server host; without it that host is refused", async () => {
    const url = `http://127.0.0.2:${mcp.port}/mcp`;
    const before = mcp.hits;
    const shut = await sessionWith(
      { type: 'limited', allowed_hosts: ['localhost'], allow_mcp_servers: false },
      url,
    );
    expect(await bash(shut, fetchCmd(url))).toContain(`${url} 403 connect=000`);
    expect(mcp.hits).toBe(before);

    const open = await sessionWith(
      { type: 'limited', allowed_hosts: ['localhost'], allow_mcp_servers: true },
      url,
    );
    const out = await bash(
      open,
      [fetchCmd(url), fetchCmd(`http://127.0.0.3:${other.port}/`)].join('; '),
    );
    expect(out).toContain(`${url} 200 connect=000`);
    expect(mcp.hits).toBe(before + 1);
    // only the MCP host was opened
    expect(out).toContain(`http://127.0.0.3:${other.port}/ 403 connect=000`);
    expect(other.hits).toBe(0);
  }, 90_000);

  it('allow_package_managers opens the registries (a real request to pypi.org), nothing else', async () => {
    const shut = await sessionWith({ type: 'limited', allowed_hosts: [] });
    // CONNECT refused by the proxy's policy (403), so no tunnel and no response
    const refused = await bash(shut, fetchCmd('https://pypi.org/simple/pip/'));
    expect(refused).toContain('https://pypi.org/simple/pip/ 000 connect=403');

    const open = await sessionWith({
      type: 'limited',
      allowed_hosts: [],
      allow_package_managers: true,
    });
    const out = await bash(
      open,
      [fetchCmd('https://pypi.org/simple/pip/'), fetchCmd(`http://127.0.0.3:${other.port}/`)].join(
        '; ',
      ),
    );
    expect(out).toContain('https://pypi.org/simple/pip/ 200 connect=200');
    expect(out).toContain(`http://127.0.0.3:${other.port}/ 403 connect=000`);
    expect(other.hits).toBe(0);
  }, 90_000);

  it("the spec's top-level network: allowlist restricts, denylist wins over it", async () => {
    const sid = await sessionWith(null, undefined, {
      allowlist: ['localhost', '127.0.0.3'],
      denylist: ['127.0.0.3'],
    });
    const out = await bash(
      sid,
      [
        fetchCmd(`http://localhost:${allowed.port}/`),
        fetchCmd(`http://127.0.0.3:${other.port}/`),
        fetchCmd(`http://127.0.0.2:${mcp.port}/`),
      ].join('; '),
    );
    expect(out).toContain(`http://localhost:${allowed.port}/ 200 connect=000`);
    expect(out).toContain(`http://127.0.0.3:${other.port}/ 403 connect=000`);
    expect(out).toContain(`http://127.0.0.2:${mcp.port}/ 403 connect=000`);
    expect(other.hits).toBe(0);
  }, 60_000);

  it('packages under limited networking need allow_package_managers (SDK rule), naming the field', async () => {
    const err = await t.client.beta.environments
      .create({
        name: 'pkgs-shut',
        config: {
          type: 'cloud',
          networking: { type: 'limited', allowed_hosts: [] },
          packages: { pip: ['requests'] },
        },
      })
      .then(
        () => null,
        (e: any) => e,
      );
    expect(err?.status).toBe(400);
    expect(err.error.error.details.field).toBe('config.networking.allow_package_managers');
    const ok = await t.client.beta.environments.create({
      name: 'pkgs-open',
      config: {
        type: 'cloud',
        networking: { type: 'limited', allowed_hosts: [], allow_package_managers: true },
        packages: { pip: ['requests'] },
      },
    });
    // turning it off later while packages remain is refused too
    const off = await t.http(`/v1/environments/${ok.id}`, {
      method: 'POST',
      headers: BETA,
      json: {
        config: { type: 'cloud', networking: { type: 'limited', allow_package_managers: false } },
      },
    });
    expect(off.status).toBe(400);
  });

  it('a spec network update naming only a denylist keeps a limited environment limited', async () => {
    const env = await t.client.beta.environments.create({
      name: 'stay-limited',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: [] } },
    });
    const r = await t.http(`/v1/environments/${env.id}`, {
      method: 'POST',
      headers: BETA,
      json: { network: { denylist: ['tracker.example'] } },
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.config.networking).toMatchObject({ type: 'limited', allowed_hosts: [] });
    expect(body.network).toEqual({ allowlist: [], denylist: ['tracker.example'] });
  });
});
