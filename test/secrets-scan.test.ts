/**
 * Secrets scan (issue 7, item 6). The platform runs as a real child process (LOG_LEVEL=debug,
 * stdout and stderr captured) with known, distinctive secrets: the operator key, the root
 * secret, the vendor fallback key, a model card key and custom header values, an MCP server
 * authorization_token, a github_repository resource token (refused: no materializer), the
 * web_search backend key, the Nomad ACL token (Nomad run), the API keys the platform hands out,
 * and an invalid key a client presents. The test drives a whole lifecycle: tenant; API keys
 * (created, used, revoked, a wrong key refused); model card (create, rotate, list); agents
 * (create, update, session override and update, GraphQL mutation, refused REST and GraphQL
 * bodies carrying the token); environment; file upload; a session whose sandbox (bubblewrap)
 * searches every file it can read (outside /proc, /sys, /dev, /usr) for each secret and prints
 * `env`, every /proc/<pid>/environ and /proc/<pid>/cmdline, idles, is snapshotted, and is
 * restored for a second turn (with a web_search); a vendor-key session; providers echoing
 * credentials in their errors; event lists, SSE streams (live and replayed), a GraphQL
 * subscription replay, every read and GraphQL query of the same resources, /metrics, /healthz,
 * /readyz.
 *
 * Then every secret, in clear and in its URL/base64 forms, is searched in every HTTP response
 * the test received (status, headers, body), every event (listed, streamed, replayed), every log
 * line of the process (through its shutdown), and every file under DATA_DIR (binary-safe; gzip
 * members such as sandbox snapshots are searched decompressed too); also the environ and
 * cmdline of every sandbox process (each bwrap and everything under it), sampled from the host's
 * /proc during the lifecycle, and on Nomad every job spec the platform registered (the test runs
 * once per sandbox driver; Nomad against test/nomad/fake.ts). A key the platform issues
 * may appear only in the one response that creates it. A failure names the secret and the place
 * (for a sandbox dump, the /proc section), never the value.
 *
 * Positive controls keep the scan from passing vacuously: a canary written in the sandbox must
 * be found by the in-sandbox search, in the recorded responses, the events, a plain data-dir
 * file and a snapshot's gzip member; the tenant key must be found in its creation response; the
 * model provider must have received the card key, the custom header and the vendor key, and
 * the search backend the web_search key; a bwrap process must have been sampled.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModelServer, type ScriptedModelServer } from './fixtures/scriptedModel.js';
import { BETA, readSse, waitFor } from './harness.js';
import { freePort, kill9, startProcess } from './process.js';
import { startNomadFake, type NomadFake } from './nomad/fake.js';
import {
  boundFileScan,
  DUMP_AGAIN,
  dumpCommand,
  dumpSectionsHolding,
} from './secretsScanSandbox.js';
import {
  describeFindings,
  findSecrets,
  readTree,
  recordingFetch,
  sandboxProcesses,
  watchProcesses,
  type Finding,
  type ProcessSeen,
  type Secret,
} from './secretsScan.js';

const rand = () => randomBytes(12).toString('hex');
const OPERATOR_KEY = `scan-operator-key-${rand()}`;
const ROOT_SECRET = `scan-root-secret-${rand()}${rand()}`;
const VENDOR_KEY = `sk-ant-scan-vendor-${rand()}`;
const CARD_KEY = `sk-scan-card-key-${rand()}`;
const CARD_HEADER = `scan-custom-header-${rand()}`;
const CARD_HEADER_ROTATED = `scan-custom-header-rotated-${rand()}`;
const MCP_TOKEN = `scan-mcp-token-${rand()}`;
/** A key nobody issued, presented by a client: never echoed. */
const WRONG_KEY = `scan-wrong-key-${rand()}`;
const CANARY = `scan-canary-${rand()}`;
const TENANT_CREATE = 'POST /v1/svc/tenants';

const MODEL = 'scan-model';
const VENDOR_MODEL = 'claude-scan-vendor';

const call = (name: string, input: Record<string, unknown>) => ({
  steps: [{ tool_use: { name, input } }],
});
const say = (text: string) => ({ steps: [{ text }] });

const NOMAD_TOKEN = `scan-nomad-token-${rand()}`;
const SEARCH_KEY = `scan-web-search-key-${rand()}`;
const GITHUB_TOKEN = `scan-github-token-${rand()}`;

/** The same scan with each sandbox driver (Nomad: against the Nomad API fake, with an ACL token). */
describe.each(['local', 'nomad'] as const)('secrets scan (%s driver)', (driver) => {
  let model: ScriptedModelServer;
  let nomad: NomadFake | null = null;
  /** The web_search backend (WEB_SEARCH_URL): answers one result and records the Authorization headers it received. */
  let search: Server;
  const searchAuth: string[] = [];
  let dataDir: string;
  let child: ChildProcess;
  let logs: () => string;
  let baseUrl: string;
  let tenantKey: string;
  const rec = recordingFetch();
  /** Events as the client saw them: `where` → event objects. */
  const events: Array<{ where: string; event: any }> = [];
  let secrets: Secret[];
  /** Nomad job specs as registered by the platform (Nomad driver), with where they were seen. */
  const nomadJobs: Array<{ where: string; job: unknown }> = [];
  /** Sandbox processes (bwrap and everything under it) as sampled from the host's /proc during the lifecycle. */
  let sandboxSeen: ProcessSeen[] = [];
  const keepNomadJobs = (when: string) => {
    for (const job of nomad?.jobs() ?? [])
      nomadJobs.push({ where: `Nomad job ${(job as any).ID} (${when})`, job });
  };

  const client = (apiKey: string) =>
    new Anthropic({ apiKey, baseURL: baseUrl, maxRetries: 0, timeout: 60_000, fetch: rec.fetch });
  const http = (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('x-api-key', init.key ?? tenantKey);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return rec.fetch(`${baseUrl}${path}`, { ...init, headers, body });
  };
  const json = async (res: Response) => {
    const text = await res.text();
    if (res.status >= 300) throw new Error(`HTTP ${res.status}: ${text}`);
    return JSON.parse(text);
  };

  beforeAll(async () => {
    model = await startScriptedModelServer();
    dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-secrets-'));
    const port = await freePort();
    const modelPort = new URL(model.url).port;
    search = createServer((req, res) => {
      searchAuth.push(String(req.headers.authorization ?? ''));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          results: [
            { title: 'Scan result', url: 'https://example.com/scan', description: 'a search hit' },
          ],
        }),
      );
    });
    await new Promise<void>((r) => search.listen(0, '127.0.0.1', () => r()));
    const searchPort = (search.address() as AddressInfo).port;
    const nomadEnv: Record<string, string> = {};
    if (driver === 'nomad') {
      // A node that fits several 1 vCPU / 4 GB sandboxes at once (this machine has 2 cores).
      nomad = await startNomadFake({
        token: NOMAD_TOKEN,
        node: { cpuMhz: 16_000, memoryMb: 65_536 },
      });
      Object.assign(nomadEnv, { NOMAD_ADDR: nomad.address, NOMAD_TOKEN });
    }
    const started = await startProcess('all', {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      API_KEY: OPERATOR_KEY,
      PLATFORM_ROOT_SECRET: ROOT_SECRET,
      ANTHROPIC_API_KEY: VENDOR_KEY,
      ANTHROPIC_BASE_URL: model.url,
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${modelPort},127.0.0.1:${searchPort}`,
      WEB_SEARCH_URL: `http://127.0.0.1:${searchPort}/search`,
      WEB_SEARCH_API_KEY: SEARCH_KEY,
      WEB_SEARCH_FLAVOR: 'generic',
      LOG_LEVEL: 'debug',
      SANDBOX_DRIVER: driver,
      ...nomadEnv,
      SANDBOX_SLEEP_AFTER_MS: '1500',
      RECOVERY_SCAN_MS: '500',
      SHUTDOWN_GRACE_MS: '2000',
    });
    child = started.child;
    logs = started.output;
    baseUrl = `http://127.0.0.1:${port}`;
  }, 60_000);

  afterAll(async () => {
    if (child) await kill9(child);
    await model?.close();
    await nomad?.close();
    await new Promise<void>((r) => (search ? search.close(() => r()) : r()));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe('no secret appears in clear in any response, event, log line or data-dir file', () => {
    it('runs the whole lifecycle, including a sandbox that prints its env, /proc/*/environ and /proc/*/cmdline', async () => {
      // Local: bwrap under the platform; Nomad: under the fake's tasks (in this process).
      const watcher = watchProcesses(() => sandboxProcesses([child.pid!, process.pid]));
      try {
        await lifecycle();
      } finally {
        sandboxSeen = watcher.stop();
      }
    }, 180_000);

    async function lifecycle() {
      // Tenant and its key (shown once, in this response only).
      const tenant = await json(
        await http('/v1/svc/tenants', {
          method: 'POST',
          key: OPERATOR_KEY,
          headers: BETA,
          json: { name: 'scan' },
        }),
      );
      tenantKey = tenant.api_key;
      expect(tenantKey).toMatch(/\S{16,}/);
      secrets = [
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
          value: tenantKey,
          allowedIn: (where) => where.startsWith(`response ${TENANT_CREATE} `),
        },
      ];
      const sdk = client(tenantKey);

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
      const agent = await sdk.beta.agents.create({
        name: 'scan-agent',
        model: MODEL,
        tools: [{ type: 'agent_toolset_20260401' }],
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
      } as any);
      const refused = await http('/v1/agents', {
        method: 'POST',
        json: {
          name: 'bad',
          model: MODEL,
          mcp_servers: [
            { name: 'bad', type: 'url', url: 'not a url', authorization_token: MCP_TOKEN },
          ],
        },
      });
      expect(refused.status).toBe(400);
      await refused.text();
      const vendorAgent = await sdk.beta.agents.create({
        name: 'scan-vendor',
        model: VENDOR_MODEL,
      });

      // A file, a session (with an MCP override carrying the token), and an API key listing.
      const session = await sdk.beta.sessions.create({
        agent: { type: 'agent_with_overrides', id: agent.id, mcp_servers: mcp },
        environment_id: env.id,
      } as any);
      const sid = session.id;
      // A resource this deployment cannot materialize is refused; its token is not echoed.
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
      expect(repo.status).toBe(400);
      await repo.text();
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
      for (const body of [
        { name: 'scan-extra' },
        { name: 'scan-env-key', environment_id: env.id },
      ]) {
        const created = await json(
          await http('/v1/svc/api_keys', { method: 'POST', headers: BETA, json: body }),
        );
        expect(created.key).toMatch(/\S{16,}/);
        secrets.push({ name: `API key ${body.name}`, value: created.key, allowedIn: keyCreated });
        if (body.name === 'scan-extra') {
          expect((await http('/v1/agents', { key: created.key })).status).toBe(200);
          await json(
            await http(`/v1/svc/api_keys/${created.id}`, { method: 'DELETE', headers: BETA }),
          );
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
            ...secrets.map((x) => ({ label: x.name, value: x.value })),
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
            variables: { i: { name: 'gql', model: MODEL, mcp_servers: mcp } },
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
              i: { name: 'gql', model: MODEL, mcp_servers: [{ ...mcp[0], url: 'not a url' }] },
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
        model.requests.some(
          (r) => r.model === VENDOR_MODEL && r.headers['x-api-key'] === VENDOR_KEY,
        ),
      ).toBe(true);
    }

    it("no sandbox process (bwrap and everything under it, read from the host's /proc) has a secret in its environ or cmdline", () => {
      expect(
        sandboxSeen.some((p) => p.cmdline.startsWith('bwrap') || /\/bwrap /.test(p.cmdline)),
      ).toBe(true);
      expect(sandboxSeen.some((p) => p.cmdline.includes('sleep'))).toBe(true); // the tool's own processes were sampled too
      const findings = sandboxSeen.flatMap((p) =>
        findSecrets(
          secrets,
          p.bytes,
          `host /proc/${p.pid} (${p.cmdline.split(' ')[0]}) environ or cmdline`,
        ),
      );
      expect(
        findings,
        `secrets found in sandbox processes:\n${describeFindings(findings)}`,
      ).toEqual([]);
    });

    it('no HTTP response (status, headers, body, SSE streams included) carries a secret', () => {
      expect(rec.responses.length).toBeGreaterThan(40);
      // Controls: the recording sees the tenant key where it is handed out, and the sandbox's canary.
      const all = (r: (typeof rec.responses)[number]) =>
        `${r.status}\n${r.headers}\n\n${r.body().toString('latin1')}`;
      expect(
        rec.responses.some((r) => r.label.startsWith(TENANT_CREATE) && all(r).includes(tenantKey)),
      ).toBe(true);
      expect(
        rec.responses.some((r) => r.label.includes('/events/stream') && all(r).includes(CANARY)),
      ).toBe(true);
      const findings: Finding[] = rec.responses.flatMap((r) =>
        findSecrets(
          secrets,
          Buffer.concat([Buffer.from(`${r.status}\n${r.headers}\n\n`), r.body()]),
          `response ${r.label} (HTTP ${r.status})`,
        ),
      );
      expect(findings, `secrets found in HTTP responses:\n${describeFindings(findings)}`).toEqual(
        [],
      );
    });

    it('no event (listed, streamed live or replayed) carries a secret', () => {
      expect(events.filter((e) => e.where.includes('(list)')).length).toBeGreaterThan(10);
      expect(events.some((e) => e.where.includes('SSE replay'))).toBe(true);
      expect(
        events.some(
          (e) =>
            e.where.includes('GraphQL subscription') && JSON.stringify(e.event).includes(CANARY),
        ),
      ).toBe(true);
      expect(events.some((e) => JSON.stringify(e.event).includes(CANARY))).toBe(true);
      // A finding in a sandbox dump names the dump sections ("== /proc/1/environ", …) that hold the secret.
      const findings = events.flatMap((e) =>
        findSecrets(secrets, JSON.stringify(e.event), e.where).map((f) => {
          const sections = dumpSectionsHolding(
            e.event,
            secrets.find((x) => x.name === f.secret)!.value,
          );
          return sections.length ? { ...f, where: `${f.where}, in ${sections.join(', ')}` } : f;
        }),
      );
      expect(findings, `secrets found in events:\n${describeFindings(findings)}`).toEqual([]);
    });

    it('no log line of the process (debug level, through shutdown) carries a secret', async () => {
      // SIGTERM: the process shuts down cleanly, flushing its store and logging its shutdown.
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      const lines = logs().split('\n');
      expect(lines.some((l) => l.includes('"level":"debug"'))).toBe(true);
      const msgOf = (line: string) => {
        try {
          return String(JSON.parse(line).msg).slice(0, 80);
        } catch {
          return line.slice(0, 80);
        }
      };
      const findings = lines.flatMap((line, i) =>
        findSecrets(secrets, line, `log line ${i + 1} (${msgOf(line)})`),
      );
      // The location quotes the start of the line: make sure that prefix itself cannot hold a secret value.
      const safe = findings.map((f) => ({
        ...f,
        where: secrets.reduce((w, s) => w.split(s.value).join(`<${s.name}>`), f.where),
      }));
      expect(safe, `secrets found in log lines:\n${describeFindings(safe)}`).toEqual([]);
    });

    it('no file under DATA_DIR (store, objects, outputs, snapshots decompressed, sandbox dirs) carries a secret', () => {
      expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
      expect(existsSync(dataDir)).toBe(true);
      const files = readTree(dataDir);
      // Controls: the sandbox's canary is found in a plain file (the event store) and inside a snapshot's gzip member.
      expect(files.some((f) => !f.path.endsWith('!gunzip') && f.bytes.includes(CANARY))).toBe(true);
      expect(files.some((f) => f.path.endsWith('.tar.gz!gunzip') && f.bytes.includes(CANARY))).toBe(
        true,
      );
      const findings = files.flatMap((f) =>
        findSecrets(secrets, f.bytes, `file DATA_DIR/${f.path}`),
      );
      expect(findings, `secrets found in data-dir files:\n${describeFindings(findings)}`).toEqual(
        [],
      );
    });

    // Defined for the Nomad driver only (not skipped for the local one: there is no job to read).
    if (driver === 'nomad') {
      it('no Nomad job spec the platform registered (task env, args, templates) carries a secret', () => {
        expect(nomadJobs.length).toBeGreaterThan(0);
        const findings = nomadJobs.flatMap((j) =>
          findSecrets(secrets, JSON.stringify(j.job), j.where),
        );
        expect(
          findings,
          `secrets found in Nomad job specs:\n${describeFindings(findings)}`,
        ).toEqual([]);
      });
    }
  });

  /** One turn through the SDK: the live stream is opened first, then the message is sent; returns the events streamed. */
  async function turn(sdk: Anthropic, sid: string, text: string, label: string): Promise<any[]> {
    const stream = await sdk.beta.sessions.events.stream(sid);
    await sdk.beta.sessions.events.send(sid, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      events.push({ where: `event ${ev.type} of ${sid} (SSE live, ${label})`, event: ev });
      if (ev.type === 'session.status_idle') break;
    }
    return seen;
  }
});
