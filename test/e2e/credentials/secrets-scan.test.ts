/**
 * Secrets scan. The platform runs as a real child process (LOG_LEVEL=debug,
 * stdout and stderr captured) with known, distinctive secrets: the operator key, the root
 * secret, the vendor fallback key, a model card key and custom header values, an MCP server
 * authorization_token, a github_repository resource token (sealed; never echoed), the
 * web_search backend key, the Nomad ACL token (Nomad run), the API keys the platform hands out,
 * the secrets of a vault credential of every type (test/e2e/credentials/secretsScanVaults.ts; the session runs
 * with that vault, and a second session uses them: placeholder, substitution at egress to an
 * upstream of the test, a command_secret in a simple git command), and an invalid key a client presents. The test drives a whole lifecycle: tenant; API keys
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
 * once per sandbox driver; Nomad against test/kit/nomad/fake.ts). A key the platform issues
 * may appear only in the one response that creates it. A failure names the secret and the place
 * (for a sandbox dump, the /proc section), never the value.
 *
 * Positive controls keep the scan from passing vacuously: a canary written in the sandbox must
 * be found by the in-sandbox search, in the recorded responses, the events, a plain data-dir
 * file and a snapshot's gzip member; the tenant key must be found in its creation response; the
 * model provider must have received the card key, the custom header and the vendor key, and
 * the search backend the web_search key; a bwrap process must have been sampled.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { startNomadFake, type NomadFake } from '../../kit/nomad/fake.js';
import { dumpSectionsHolding } from './secretsScanSandbox.js';
import { vaultEgress } from './secretsScanVaults.js';
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
} from '../../kit/secretsScan.js';
import {
  CANARY,
  TENANT_CREATE,
  MODEL,
  NOMAD_TOKEN,
  OPERATOR_KEY,
  ROOT_SECRET,
  SEARCH_KEY,
  VENDOR_KEY,
  lifecycle,
  type ScanState,
} from './secretsScanLifecycle.js';

/** The same scan with each sandbox driver (Nomad: against the Nomad API fake, with an ACL token). */
describe.each(['local', 'nomad'] as const)('secrets scan (%s driver)', (driver) => {
  let model: ScriptedModelServer;
  let nomad: NomadFake | null = null;
  /** The web_search backend (WEB_SEARCH_URL): answers one result and records the Authorization headers it received. */
  let search: Server;
  const searchAuth: string[] = [];
  /** An upstream of the sandbox (vault egress): what it received in X-Scan and the body. */
  let egressUpstream: Server;
  const egressSeen: Array<{ header?: string; body: string }> = [];
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

  /** The lifecycle (secretsScanLifecycle.ts) reads and writes this state by reference. */
  const state: ScanState = {
    get tenantKey() {
      return tenantKey;
    },
    set tenantKey(v) {
      tenantKey = v;
    },
    get secrets() {
      return secrets;
    },
    set secrets(v) {
      secrets = v;
    },
    get model() {
      return model;
    },
    searchAuth,
    get dataDir() {
      return dataDir;
    },
    get baseUrl() {
      return baseUrl;
    },
    rec,
    events,
    keepNomadJobs,
    client: (apiKey) => client(apiKey),
    http: (path, init) => http(path, init),
    json: (res) => json(res),
    turn: (sdk, sid, text, label) => turn(sdk, sid, text, label),
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
    egressUpstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        egressSeen.push({
          header: req.headers['x-scan'] as string | undefined,
          body: Buffer.concat(chunks).toString(),
        });
        res.end('received');
      });
    });
    await new Promise<void>((r) => egressUpstream.listen(0, '127.0.0.1', () => r()));
    const egressPort = (egressUpstream.address() as AddressInfo).port;
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
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${modelPort},127.0.0.1:${searchPort},127.0.0.1:${egressPort}`,
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
    egressUpstream?.closeAllConnections();
    await new Promise<void>((r) => (egressUpstream ? egressUpstream.close(() => r()) : r()));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe('no secret appears in clear in any response, event, log line or data-dir file', () => {
    it('runs the whole lifecycle, including a sandbox that prints its env, /proc/*/environ and /proc/*/cmdline', async () => {
      // Local: bwrap under the platform; Nomad: under the fake's tasks (in this process).
      const watcher = watchProcesses(() => sandboxProcesses([child.pid!, process.pid]));
      try {
        await lifecycle(state);
        // The vault's secrets in use: placeholder, substitution at egress, a simple git command.
        const port = (egressUpstream.address() as AddressInfo).port;
        const url = driver === 'local' ? `http://127.0.0.1:${port}/egress` : null;
        await vaultEgress(state, MODEL, url, () => egressSeen);
        keepNomadJobs('vault egress');
      } finally {
        sandboxSeen = watcher.stop();
      }
    }, 180_000);

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
