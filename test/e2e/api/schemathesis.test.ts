/**
 * Schemathesis (PyPI, pinned in test/kit/python/requirements.txt) drives the served OpenAPI
 * document (`GET /v1/openapi.json`) against an embedded platform started here (operator key,
 * SANDBOX_DRIVER=none, the scripted model): examples, coverage, fuzzing and stateful phases (the
 * stateful phase chains operations along links schemathesis infers from the document), a fixed
 * seed and a bounded number of examples per operation. It passes only with 0 server errors
 * and every response conforming to the document (status code, content type, headers, body
 * schema). Path ids are real: one resource of each kind is created first and its id given to
 * every operation that takes one (DELETE operations get their own, so the rest keep theirs).
 *
 * Not checked: the bodies of SSE answers (documented as text/event-stream, which schemathesis
 * does not validate against a schema); their frames are validated in contract-shapes.test.ts.
 *
 * Needs the venv from test/kit/python/setup.sh (.ci/run creates it and sets AGENTFLEET_PYTHON):
 * without it the test is skipped, and .ci/run fails on any skipped test.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

const PYTHON =
  process.env.AGENTFLEET_PYTHON ?? join(homedir(), '.cache/agentfleet/venv/bin/python');
const SCHEMATHESIS = join(dirname(PYTHON), 'schemathesis');
const available = existsSync(SCHEMATHESIS);
/** Examples per operation and phase; ~65 operations finish in a few minutes on 2 cores. */
const MAX_EXAMPLES = process.env.SCHEMATHESIS_MAX_EXAMPLES ?? '10';
/** Scenarios of the stateful phase (operations chained along the links it infers). */
const STATEFUL_EXAMPLES = process.env.SCHEMATHESIS_STATEFUL_EXAMPLES ?? '30';
const SEED = process.env.SCHEMATHESIS_SEED ?? '20260401';
const CHECKS = process.env.SCHEMATHESIS_CHECKS?.split(',') ?? [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
];

let t: TestPlatform;
let work: string;

function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: work,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NO_COLOR: '1',
        SCHEMATHESIS_TELEMETRY: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.skipIf(!available)(
  `schemathesis against the OpenAPI document${available ? '' : ` (skipped: no ${SCHEMATHESIS}; run test/kit/python/setup.sh or set AGENTFLEET_PYTHON)`}`,
  () => {
    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), 'agentfleet-schemathesis-'));
      t = await startPlatform({
        env: {
          // No limit of the platform is what is tested here: none may answer 429 mid-run (a
          // valid key always passes the failed-auth limiter; these keep guesses and streams
          // from schemathesis's own generated requests under every budget too).
          RATE_LIMIT_PER_MINUTE: '10000000',
          AUTH_FAILURES_PER_MINUTE: '1000000',
          AUTH_FAILURES_GLOBAL_PER_MINUTE: '1000000',
          SSE_MAX_STREAMS_PER_TENANT: '100000',
          SANDBOX_DRIVER: 'none',
        },
      });
    });
    afterAll(async () => {
      await t?.close();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it(
      '0 server errors and every response conforms to the document',
      async () => {
        const post = async (path: string, json: unknown) => {
          const res = await t.http(path, { method: 'POST', headers: BETA, json });
          expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
          return ((await res.json()) as { id: string }).id;
        };
        const upload = async (name: string) => {
          const form = new FormData();
          form.set('file', new Blob(['hello']), name);
          const res = await t.http('/v1/files', { method: 'POST', body: form });
          expect(res.status).toBe(200);
          return ((await res.json()) as { id: string }).id;
        };
        const skill = (name: string) =>
          post('/v1/skills', {
            files: [
              { filename: 'SKILL.md', content: `---\nname: ${name}\ndescription: st\n---\n` },
            ],
          });
        // Real ids, by the prefix each id parameter declares; DELETE operations get their own.
        const env = await post('/v1/environments', { name: 'st-env' });
        const agent = await post('/v1/agents', { name: 'st-agent', model: 'claude-sonnet-4-5' });
        const card = (prefix: string) =>
          post('/v1/svc/model_cards', {
            model_id: `st-${prefix}`,
            provider: 'anthropic',
            model: 'm',
            base_url: t.model.url,
            api_key: 'sk-st',
          });
        // A vault with one credential (its routes take both ids, from the same map).
        const vault = async (name: string) => {
          const id = await post('/v1/vaults', { display_name: `st-${name}` });
          const auth = { type: 'static_bearer', token: 'st', mcp_server_url: 'https://st.test/' };
          return { vlt_: id, vcrd_: await post(`/v1/vaults/${id}/credentials`, { auth }) };
        };
        // A memory store with one memory and that memory's first (no longer current) version.
        const memory = async (name: string) => {
          const store = await post('/v1/memory_stores', { name: `st-${name}` });
          const mem = await post(`/v1/memory_stores/${store}/memories`, {
            path: '/st.md',
            content: 'one',
          });
          await post(`/v1/memory_stores/${store}/memories/${mem}`, { content: 'two' });
          const versions = (await (
            await t.http(`/v1/memory_stores/${store}/memory_versions?memory_id=${mem}`)
          ).json()) as { data: Array<{ id: string }> };
          return { memstore_: store, mem_: mem, memver_: versions.data[1]!.id };
        };
        // A deployment and one of its runs; a self_hosted environment whose session queued Work
        // (the Work routes take that environment's id: see `env_` below).
        const deployment = await post('/v1/deployments', {
          name: 'st-deployment',
          agent,
          environment_id: env,
          initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
        });
        const deploymentRun = await post(`/v1/deployments/${deployment}/run`, {});
        const hosted = await post('/v1/environments', {
          name: 'st-self-hosted',
          config: { type: 'self_hosted' },
        });
        await post('/v1/sessions', { agent, environment_id: hosted });
        const items = (await (
          await t.http(`/v1/environments/${hosted}/work`, { headers: BETA })
        ).json()) as { data: Array<{ id: string }> };
        const workIds = { depl_: deployment, drun_: deploymentRun, work_: items.data[0]!.id };
        const keep: Record<string, string> = {
          ...workIds,
          ...(await vault('keep')),
          ...(await memory('keep')),
          env_: env,
          agent_: agent,
          sess_: await post('/v1/sessions', { agent, environment_id: env }),
          file_: await upload('keep.txt'),
          skill_: await skill('st-keep-skill'),
          mc_: await card('keep'),
          key_: await post('/v1/svc/api_keys', { name: 'st-keep' }),
          whep_: await post('/v1/svc/webhook_endpoints', { url: 'https://hooks.example.com/k' }),
          inv_: await post('/v1/svc/console/invitations', { email: 'st-keep@example.com' }),
          pub_: await post('/v1/svc/integrations/github/publications', {
            agent,
            environment_id: env,
            workspace: { owner: 'st-keep' },
          }),
        };
        // A dream over the kept store and session (it fails on the scripted model's 'ok').
        const dream = (ids: Record<string, string>) =>
          post('/v1/dreams', {
            inputs: [
              { type: 'memory_store', memory_store_id: ids.memstore_ },
              { type: 'sessions', session_ids: [ids.sess_] },
            ],
            model: 'claude-sonnet-4-5',
          });
        keep.drm_ = await dream(keep);
        // An eval run of one case (judged by expected text against the scripted model's 'ok').
        const evalRun = () =>
          post('/v1/svc/evals', {
            agent,
            environment_id: env,
            cases: [{ prompt: 'hi', expected_text: 'ok' }],
          });
        keep.eval_ = await evalRun();
        // The kept session's primary thread (core/src/threads/records.ts primaryThreadId).
        keep.sthr_ = `sthr_${keep.sess_!.slice('sess_'.length)}`;
        const doomed: Record<string, string> = {
          ...workIds,
          ...(await vault('doomed')),
          ...(await memory('doomed')),
          env_: await post('/v1/environments', { name: 'st-doomed' }),
          agent_: await post('/v1/agents', { name: 'st-doomed', model: 'claude-sonnet-4-5' }),
          sess_: await post('/v1/sessions', { agent, environment_id: env }),
          file_: await upload('doomed.txt'),
          skill_: await skill('st-doomed-skill'),
          mc_: await card('doomed'),
          key_: await post('/v1/svc/api_keys', { name: 'st-doomed' }),
          whep_: await post('/v1/svc/webhook_endpoints', { url: 'https://hooks.example.com/d' }),
          inv_: await post('/v1/svc/console/invitations', { email: 'st-doomed@example.com' }),
          pub_: await post('/v1/svc/integrations/github/publications', {
            agent,
            environment_id: env,
            workspace: { owner: 'st-doomed' },
          }),
        };
        doomed.drm_ = await dream(doomed);
        doomed.eval_ = await evalRun();

        const doc = (await (await t.http('/v1/openapi.json', { key: null })).json()) as any;
        const toml: string[] = [
          `seed = ${Number(SEED)}`,
          'workers = 1',
          // A request answered after this counts as a network error. Locally every operation
          // answers in well under 20 s; on a loaded CI machine two writes once took longer, so
          // the bound is 60 s (not_a_server_error still fails a request that never answers).
          'request-timeout = 60',
          'max-stream-events = 20',
          '[generation]',
          `max-examples = ${Number(MAX_EXAMPLES)}`,
          '[phases.stateful.generation]',
          `max-examples = ${Number(STATEFUL_EXAMPLES)}`,
          '[headers]',
          `"x-api-key" = "${t.operatorKey}"`,
        ];
        let withIds = 0;
        for (const [path, ops] of Object.entries<any>(doc.paths)) {
          for (const [method, op] of Object.entries<any>(ops)) {
            const values: Record<string, string | number> = {};
            for (const p of op.parameters ?? []) {
              if (p.in !== 'path') continue;
              const prefix = /^\^([a-z]+_)$/.exec(p.schema?.pattern ?? '')?.[1];
              if (prefix === 'env_' && path.includes('/work')) values[`path.${p.name}`] = hosted;
              else if (prefix) {
                // A console member (usr_) exists only after an IdP sign-in, which this test
                // has none of, and a session resource (sres_) belongs to one session: for
                // those schemathesis generates the ids, and the routes answer 404.
                const id = (method === 'delete' ? doomed : keep)[prefix];
                if (id) values[`path.${p.name}`] = id;
                else
                  expect(['usr_', 'sres_'], `no ${prefix} id kept for ${path}`).toContain(prefix);
              } else if (p.name === 'version')
                values['path.version'] = path.startsWith('/v1/skills/') ? 'latest' : 1;
              else if (path === '/v1/models/{id}') values['path.id'] = 'st-keep';
            }
            if (!Object.keys(values).length) continue;
            withIds++;
            toml.push(
              '[[operations]]',
              `include-operation-id = "${op.operationId}"`,
              `parameters = { ${Object.entries(values)
                .map(([k, v]) => `"${k}" = ${JSON.stringify(v)}`)
                .join(', ')} }`,
            );
            // The live event stream never ends on its own: read a few frames, or stop waiting after 3 s.
            if (
              ['streamEvents', 'streamSessionThread', 'streamSessionThreadEvents'].includes(
                op.operationId,
              )
            )
              toml.push('request-timeout = 3', 'max-stream-events = 3');
          }
        }
        expect(withIds).toBeGreaterThan(30);
        const config = join(work, 'schemathesis.toml');
        writeFileSync(config, `${toml.join('\n')}\n`);

        const reportDir = process.env.SCHEMATHESIS_REPORT_DIR ?? join(work, 'report');
        const { code, out } = await run(
          SCHEMATHESIS,
          [
            '--config-file',
            config,
            '--no-color',
            'run',
            `${t.url}/v1/openapi.json`,
            '--checks',
            CHECKS.join(','),
            '--phases',
            'examples,coverage,fuzzing,stateful',
            '--no-shrink',
            // SCHEMATHESIS_REPORT_DIR keeps the JUnit report (per-operation results and times)
            // and the console output (output.txt).
            '--report',
            'junit',
            '--report-dir',
            reportDir,
          ],
          22 * 60_000,
        );
        mkdirSync(reportDir, { recursive: true });
        writeFileSync(join(reportDir, 'output.txt'), out);
        expect(
          code,
          `schemathesis exit ${code}:\n${out.length > 30_000 ? `…${out.slice(-30_000)}` : out}`,
        ).toBe(0);
        expect(out).toMatch(/Test cases:\s+\d+ generated, \d+ passed/);
        // The stateful phase ran (it is skipped, not failed, when it finds no links).
        expect(out).toMatch(/✅\s+Stateful \(in /);
        expect(out).toMatch(/Scenarios:\s+[1-9]/);
        expect(out).not.toMatch(/Runtime Error|\d+ errors?\b/);
      },
      23 * 60_000,
    );
  },
);
