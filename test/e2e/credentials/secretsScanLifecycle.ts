/**
 * The lifecycle the secrets scan drives (test/e2e/credentials/secrets-scan.test.ts, whose header says what is
 * searched and where), and the distinctive secrets it plants. `lifecycle` records every
 * response, event and Nomad job through the state the test file owns, and sets `tenantKey` and
 * `secrets` there.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'vitest';
import type { ScriptedModelServer } from '../../kit/fixtures/scriptedModel.js';
import { BETA, readSse, waitFor } from '../../kit/harness.js';
import { boundFileScan, DUMP_AGAIN, dumpCommand } from './secretsScanSandbox.js';
import { readTree, recordingFetch, type Secret } from '../../kit/secretsScan.js';
import { VAULT_SECRETS, vaultLifecycle } from './secretsScanVaults.js';

export const rand = () => randomBytes(12).toString('hex');
export const OPERATOR_KEY = `scan-operator-key-${rand()}`;
export const ROOT_SECRET = `scan-root-secret-${rand()}${rand()}`;
export const VENDOR_KEY = `sk-ant-scan-vendor-${rand()}`;
export const CARD_KEY = `sk-scan-card-key-${rand()}`;
export const CARD_HEADER = `scan-custom-header-${rand()}`;
export const CARD_HEADER_ROTATED = `scan-custom-header-rotated-${rand()}`;
export const MCP_TOKEN = `scan-mcp-token-${rand()}`;
/** A key nobody issued, presented by a client: never echoed. */
export const WRONG_KEY = `scan-wrong-key-${rand()}`;
export const CANARY = `scan-canary-${rand()}`;
export const TENANT_CREATE = 'POST /v1/svc/tenants';

export const MODEL = 'scan-model';
export const VENDOR_MODEL = 'claude-scan-vendor';

export const call = (name: string, input: Record<string, unknown>) => ({
  steps: [{ tool_use: { name, input } }],
});
export const say = (text: string) => ({ steps: [{ text }] });

export const NOMAD_TOKEN = `scan-nomad-token-${rand()}`;
export const SEARCH_KEY = `scan-web-search-key-${rand()}`;
export const GITHUB_TOKEN = `scan-github-token-${rand()}`;

/** What the lifecycle reads and writes: the test file's state, shared by reference. */
export interface ScanState {
  tenantKey: string;
  secrets: Secret[];
  model: ScriptedModelServer;
  searchAuth: string[];
  dataDir: string;
  baseUrl: string;
  rec: ReturnType<typeof recordingFetch>;
  events: Array<{ where: string; event: any }>;
  keepNomadJobs: (when: string) => void;
  client: (apiKey: string) => Anthropic;
  http: (path: string, init?: RequestInit & { key?: string; json?: unknown }) => Promise<Response>;
  json: (res: Response) => Promise<any>;
  turn: (sdk: Anthropic, sid: string, text: string, label: string) => Promise<any[]>;
}

export async function lifecycle(s: ScanState): Promise<void> {
  const { model, searchAuth, dataDir, baseUrl, rec, events } = s;
  const { keepNomadJobs, client, http, json, turn } = s;
  // Tenant and its key (shown once, in this response only).
  const tenant = await json(
    await http('/v1/svc/tenants', {
      method: 'POST',
      key: OPERATOR_KEY,
      headers: BETA,
      json: { name: 'scan' },
    }),
  );
  s.tenantKey = tenant.api_key;
  expect(s.tenantKey).toMatch(/\S{16,}/);
  s.secrets = [
    { name: 'operator API_KEY', value: OPERATOR_KEY },
    { name: 'PLATFORM_ROOT_SECRET', value: ROOT_SECRET },
    { name: 'ANTHROPIC_API_KEY (vendor)', value: VENDOR_KEY },
    { name: 'model card api_key', value: CARD_KEY },
    { name: 'model card custom header value', value: CARD_HEADER },
    { name: 'model card custom header value (rotated)', value: CARD_HEADER_ROTATED },
    { name: 'MCP server authorization_token', value: MCP_TOKEN },
    { name: 'an invalid API key presented by a client', value: WRONG_KEY },
    { name: 'NOMAD_TOKEN', value: NOMAD_TOKEN },
    { name: 'WEB_SEARCH_API_KEY', value: SEARCH_KEY },
    { name: 'github_repository resource authorization_token', value: GITHUB_TOKEN },
    {
      name: 'tenant API key',
      value: s.tenantKey,
      allowedIn: (where) => where.startsWith(`response ${TENANT_CREATE} `),
    },
    ...VAULT_SECRETS,
  ];
  const sdk = client(s.tenantKey);

  // Model card with a key and a custom header; rotating the header; listing.
  const card = await json(
    await http('/v1/svc/model_cards', {
      method: 'POST',
      headers: BETA,
      json: {
        model_id: MODEL,
        provider: 'anthropic',
        model: MODEL,
        base_url: model.url,
        api_key: CARD_KEY,
        custom_headers: { 'x-scan-header': CARD_HEADER },
      },
    }),
  );
  await json(
    await http(`/v1/svc/model_cards/${card.id}`, {
      method: 'POST',
      headers: BETA,
      json: { custom_headers: { 'x-scan-header': CARD_HEADER_ROTATED } },
    }),
  );
  await json(
    await http(`/v1/svc/model_cards/${card.id}`, {
      method: 'POST',
      headers: BETA,
      json: { custom_headers: { 'x-scan-header': CARD_HEADER } },
    }),
  );
  await json(await http('/v1/svc/model_cards', { headers: BETA }));
  await json(await http('/v1/models'));
  await json(await http(`/v1/models/${MODEL}`));

  // Environment, agents with an MCP server carrying an inline token (create, update), a refused body carrying it.
  const env = await sdk.beta.environments.create({ name: 'scan-env' });
  const mcp = [
    {
      name: 'scan-mcp',
      type: 'url',
      url: 'https://mcp.example.com/sse',
      authorization_token: MCP_TOKEN,
    },
  ];
  // Every MCP server is named by an mcp_toolset (SDK rule).
  const tools = (server: string) => [
    { type: 'agent_toolset_20260401' },
    { type: 'mcp_toolset', mcp_server_name: server },
  ];
  const agent = await sdk.beta.agents.create({
    name: 'scan-agent',
    model: MODEL,
    tools: tools('scan-mcp'),
    mcp_servers: mcp,
  } as any);
  expect(agent.mcp_servers).toEqual([
    expect.objectContaining({
      name: 'scan-mcp',
      type: 'url',
      url: 'https://mcp.example.com/sse',
    }),
  ]);
  expect((agent.mcp_servers[0] as any).has_authorization_token).toBe(true);
  await sdk.beta.agents.update(agent.id, {
    version: agent.version,
    description: 'v2',
    mcp_servers: [{ ...mcp[0], name: 'scan-mcp-2' }],
    tools: tools('scan-mcp-2'),
  } as any);
  const refused = await http('/v1/agents', {
    method: 'POST',
    json: {
      name: 'bad',
      model: MODEL,
      mcp_servers: [{ name: 'bad', type: 'url', url: 'not a url', authorization_token: MCP_TOKEN }],
      tools: tools('bad'),
    },
  });
  expect(refused.status).toBe(400);
  await refused.text();
  const vendorAgent = await sdk.beta.agents.create({
    name: 'scan-vendor',
    model: VENDOR_MODEL,
  });

  // A vault with a credential of every type (test/e2e/credentials/secretsScanVaults.ts), in the session's vaults.
  const vaultId = await vaultLifecycle(http, json);
  // A file, a session (with an MCP override carrying the token), and an API key listing.
  const session = await sdk.beta.sessions.create({
    agent: {
      type: 'agent_with_overrides',
      id: agent.id,
      mcp_servers: mcp,
      tools: tools('scan-mcp'),
    },
    environment_id: env.id,
    vault_ids: [vaultId],
  } as any);
  const sid = session.id;
  // A repository resource: accepted where the sandbox's traffic goes through the session proxy
  // (local driver), else refused naming resources[0].type; its token is never echoed.
  const repo = await http('/v1/sessions', {
    method: 'POST',
    json: {
      agent: agent.id,
      environment_id: env.id,
      resources: [
        {
          type: 'github_repository',
          url: 'https://github.com/acme/private',
          authorization_token: GITHUB_TOKEN,
        },
      ],
    },
  });
  const repoBody = await repo.text();
  expect(repoBody).not.toContain(GITHUB_TOKEN);
  expect(repo.status === 200 || /resources\[0\]\.type/.test(repoBody), repoBody).toBe(true);
  await json(
    await http(`/v1/sessions/${sid}`, {
      method: 'POST',
      json: { agent: { mcp_servers: mcp } },
    }),
  );
  await sdk.beta.files.upload({
    file: await toFile(Buffer.from('scan file\n'), 'scan.txt'),
    session_id: sid,
  } as any);
  // More keys (one an environment service key): shown once each; a revoked key and a wrong key are refused without an echo.
  const keyCreated = (where: string) => where.startsWith('response POST /v1/svc/api_keys ');
  for (const body of [{ name: 'scan-extra' }, { name: 'scan-env-key', environment_id: env.id }]) {
    const created = await json(
      await http('/v1/svc/api_keys', { method: 'POST', headers: BETA, json: body }),
    );
    expect(created.key).toMatch(/\S{16,}/);
    s.secrets.push({ name: `API key ${body.name}`, value: created.key, allowedIn: keyCreated });
    if (body.name === 'scan-extra') {
      expect((await http('/v1/agents', { key: created.key })).status).toBe(200);
      await json(await http(`/v1/svc/api_keys/${created.id}`, { method: 'DELETE', headers: BETA }));
      const revoked = await http('/v1/agents', { key: created.key });
      expect(revoked.status).toBe(401);
      await revoked.text();
    }
  }
  for (const headers of [
    { 'x-api-key': WRONG_KEY },
    { authorization: `Bearer ${WRONG_KEY}` },
  ] as Array<Record<string, string>>) {
    const wrong = await rec.fetch(`${baseUrl}/v1/agents`, { headers });
    expect(wrong.status).toBe(401);
    await wrong.text();
  }
  await json(await http('/v1/svc/api_keys', { headers: BETA }));

  // Turn 1: the sandbox dumps everything it can see of its processes.
  model.script(
    MODEL,
    call('bash', { command: `echo ${CANARY} > /workspace/canary.txt; echo written` }),
    call('bash', {
      command: boundFileScan([
        { label: 'canary', value: CANARY },
        ...s.secrets.map((x) => ({ label: x.name, value: x.value })),
      ]),
    }),
    call('bash', { command: dumpCommand(CANARY) }),
    say('dumped'),
  );
  const first = await turn(sdk, sid, 'dump the environment', 'turn 1');
  keepNomadJobs('turn 1');
  const results = first.filter((e) => e.type === 'agent.tool_result');
  expect(results.map((r) => r.is_error)).toEqual([false, false, false]);
  // No file readable in the sandbox holds a secret (the canary proves the search finds what is there).
  const scanLines = (results[1].content.map((c: any) => c.text ?? '').join('') as string).split(
    '\n',
  );
  expect(scanLines).toContain('bound-file scan done');
  expect(scanLines).toContain('bound-file canary: /workspace/canary.txt');
  expect(
    scanLines.filter(
      (l) =>
        l.startsWith('bound-file ') &&
        !l.startsWith('bound-file canary:') &&
        l !== 'bound-file scan done',
    ),
  ).toEqual([]);
  const dump = results[2];
  expect(dump?.is_error).toBe(false);
  const dumpText: string = dump.content.map((c: any) => c.text ?? '').join('');
  expect(dumpText).toContain('== env');
  expect(dumpText).toMatch(/== \/proc\/1\/environ/);
  expect(dumpText).toMatch(/== \/proc\/1\/cmdline/);
  expect(dumpText).toContain(CANARY);

  // Idle: the sandbox is snapshotted (its /workspace holds the canary) and stopped.
  await waitFor(
    async () =>
      readTree(join(dataDir, 'objects')).some(
        (f) =>
          f.path.includes('snapshots') &&
          f.path.endsWith('.tar.gz!gunzip') &&
          f.bytes.includes(CANARY),
      ),
    30_000,
    250,
  );

  // Turn 2: the sandbox is restored and dumps again.
  model.script(
    MODEL,
    call('bash', { command: DUMP_AGAIN }),
    call('web_search', { query: 'scan query' }),
    say('second done'),
  );
  const second = await turn(sdk, sid, 'again', 'turn 2');
  keepNomadJobs('turn 2');
  const [again, searched] = second.filter((e) => e.type === 'agent.tool_result');
  expect(again?.is_error).toBe(false);
  expect(again.content.map((c: any) => c.text ?? '').join('')).toContain(CANARY);
  // web_search used the operator's key (sent to the backend through the session's proxy).
  expect(searched?.is_error).toBe(false);
  expect(searched.content.map((c: any) => c.text ?? '').join('')).toContain('Scan result');
  expect(searchAuth).toContain(`Bearer ${SEARCH_KEY}`);

  // The vendor fallback key in use.
  const vendorSession = await sdk.beta.sessions.create({
    agent: vendorAgent.id,
    environment_id: env.id,
  });
  await turn(sdk, vendorSession.id, 'hello vendor', 'vendor turn');

  // Providers that echo credentials in their errors (an HTTP error, an error mid-stream): the
  // platform's session.error events and logs must not pass them on.
  model.script(VENDOR_MODEL, {
    steps: [
      { text: 'partial' },
      {
        stream_error: {
          type: 'invalid_request_error',
          message: `key ${VENDOR_KEY} is not allowed`,
        },
      },
    ],
  });
  const vendorError = await turn(
    sdk,
    vendorSession.id,
    'provoke a stream error',
    'vendor echo turn',
  );
  expect(vendorError.some((e) => e.type === 'session.error')).toBe(true);
  const echoSession = await sdk.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
  });
  model.script(MODEL, {
    steps: [
      {
        http_error: {
          status: 400,
          type: 'invalid_request_error',
          message: `header x-scan-header=${CARD_HEADER} not valid with key ${CARD_KEY}`,
        },
      },
    ],
  });
  const cardError = await turn(sdk, echoSession.id, 'provoke an http error', 'card echo turn');
  expect(cardError.some((e) => e.type === 'session.error')).toBe(true);

  // Every read of the same resources: REST, SDK, SSE replay, GraphQL, outputs, metrics.
  for (const [s, turns] of [
    [sid, 2],
    [vendorSession.id, 2],
    [echoSession.id, 1],
  ] as const) {
    const page = await sdk.beta.sessions.events.list(s, { limit: 1000 } as any);
    for (const e of page.data)
      events.push({ where: `event seq ${(e as any).seq} ${e.type} of ${s} (list)`, event: e });
    let idles = 0;
    const replay = await readSse(
      await http(`/v1/sessions/${s}/events/stream?replay=1`),
      (f) => f.event === 'session.status_idle' && ++idles === turns,
      30_000,
    );
    for (const f of replay)
      events.push({ where: `event ${f.event} id ${f.id} of ${s} (SSE replay)`, event: f.data });
    await sdk.beta.sessions.retrieve(s);
  }
  await json(await http(`/v1/sessions/${sid}/log`, { headers: BETA }));
  await sdk.beta.sessions.list();
  await sdk.beta.agents.retrieve(agent.id);
  await sdk.beta.agents.retrieve(agent.id, { version: 1 });
  await sdk.beta.agents.list();
  await sdk.beta.agents.versions.list(agent.id);
  await sdk.beta.environments.retrieve(env.id);
  await sdk.beta.environments.list();
  await sdk.beta.files.list();
  const outputs = await json(await http(`/v1/sessions/${sid}/outputs`, { headers: BETA }));
  expect(outputs.data.map((o: any) => o.filename)).toContain('env-dump.txt');
  for (const o of outputs.data)
    await (
      await http(`/v1/sessions/${sid}/outputs/${encodeURIComponent(o.filename)}`, {
        headers: BETA,
      })
    ).arrayBuffer();
  for (const query of [
    `{ agent(id: "${agent.id}") { id version mcpServers tools } }`,
    `{ agents(limit: 10) { nodes { id mcpServers } } }`,
    `{ agentVersions(agentId: "${agent.id}") { nodes { version mcpServers } } }`,
    `{ environment(id: "${env.id}") { id env network config } }`,
    `{ session(id: "${sid}") { id status resources agent { mcpServers } } }`,
    `{ sessions(limit: 10) { nodes { id agent { mcpServers } } } }`,
    `{ sessionEvents(sessionId: "${sid}", limit: 200) { nodes { seq type data } } }`,
  ]) {
    const body = await json(await http('/graphql', { method: 'POST', json: { query } }));
    expect(body.errors).toBeUndefined();
  }
  const created = await json(
    await http('/graphql', {
      method: 'POST',
      json: {
        query: 'mutation($i: JSON!) { createAgent(input: $i) { id mcpServers } }',
        variables: { i: { name: 'gql', model: MODEL, mcp_servers: mcp, tools: tools('scan-mcp') } },
      },
    }),
  );
  expect(created.data.createAgent.mcpServers[0].has_authorization_token).toBe(true);
  const gqlRefused = await json(
    await http('/graphql', {
      method: 'POST',
      json: {
        query: 'mutation($i: JSON!) { createAgent(input: $i) { id } }',
        variables: {
          i: {
            name: 'gql',
            model: MODEL,
            mcp_servers: [{ ...mcp[0], url: 'not a url' }],
            tools: tools('scan-mcp'),
          },
        },
      },
    }),
  );
  expect(gqlRefused.errors?.length).toBeGreaterThan(0);
  // The GraphQL subscription (graphql-sse, distinct connections), replaying the session from the start.
  let subIdles = 0;
  const sub = await readSse(
    await http('/graphql/stream', {
      method: 'POST',
      headers: { accept: 'text/event-stream' },
      json: {
        query: `subscription { sessionEvents(sessionId: "${sid}", afterSeq: 0) { seq type data } }`,
      },
    }),
    (f) =>
      f.event === 'next' &&
      f.data?.data?.sessionEvents?.type === 'session.status_idle' &&
      ++subIdles === 2,
    30_000,
  );
  for (const f of sub)
    if (f.event === 'next')
      events.push({
        where: `event seq ${f.data?.data?.sessionEvents?.seq} of ${sid} (GraphQL subscription)`,
        event: f.data,
      });
  expect(subIdles).toBe(2);
  await (await http('/metrics', { key: OPERATOR_KEY })).text();
  await (await http('/metrics')).text();
  await (await rec.fetch(`${baseUrl}/metrics`)).text();
  await (await rec.fetch(`${baseUrl}/healthz`)).text();
  await (await rec.fetch(`${baseUrl}/readyz`)).text();

  // The secrets were in use: the provider received the card key, its header and the vendor key.
  const cardCalls = model.requests.filter((r) => r.model === MODEL);
  expect(cardCalls.length).toBeGreaterThan(0);
  expect(
    cardCalls.every(
      (r) => r.headers['x-api-key'] === CARD_KEY && r.headers['x-scan-header'] === CARD_HEADER,
    ),
  ).toBe(true);
  expect(
    model.requests.some((r) => r.model === VENDOR_MODEL && r.headers['x-api-key'] === VENDOR_KEY),
  ).toBe(true);
}
