/**
 * Environment `packages`, installed for real (core/src/sandbox/packages/): through the official
 * TypeScript SDK against an in-process platform with the local (bubblewrap) driver, the scripted
 * model driving `bash` in the session's sandbox, and the real registries (PyPI, npm, Debian).
 *
 * - pip, npm and apt packages of an environment are usable from bash inside the session;
 * - the layer is built once for two concurrent sessions of one environment and shared with a
 *   second environment with the same lists (the cache's builds.log and directory);
 * - the layer is mounted read-only (writing fails);
 * - a nonexistent package, and gem (no gem tool on this host), end the sandbox start with a
 *   session.error naming the manager and the package, and the tool result is an error;
 * - bad package names are refused with 400 naming the field, at create and update.
 *
 * This machine's network resolves the registries to 203.0.113.80 (a TEST-NET address) which
 * the egress policy refuses as non-public: the test opens exactly those names the way an
 * operator would (EGRESS_ALLOW_PRIVATE_HOSTS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';

const REGISTRIES = [
  'pypi.org',
  'files.pythonhosted.org',
  'registry.npmjs.org',
  'deb.debian.org',
  'rubygems.org',
];

let t: TestPlatform;
let cacheDir: string;

async function modelCard(modelId: string) {
  await addModelCard(t, modelId);
}

/** A session on `envId` whose one turn runs `command` with bash (a model of its own: FIFO per model). */
async function bashTurn(envId: string, modelId: string, command: string) {
  await modelCard(modelId);
  const agent = await t.client.beta.agents.create({
    name: `pkg-${modelId}`,
    model: modelId,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
  t.model.script(modelId, { steps: [{ tool_use: { name: 'bash', input: { command } } }] });
  const seen = (await runTurn(t.client, sid, 'go')).events;
  const result = seen.find((e) => e.type === 'agent.tool_result');
  return {
    sid,
    seen,
    text: (result?.content?.[0]?.text ?? '') as string,
    isError: result?.is_error as boolean,
  };
}

const builds = () =>
  existsSync(join(cacheDir, 'builds.log'))
    ? readFileSync(join(cacheDir, 'builds.log'), 'utf8').trim().split('\n').filter(Boolean)
    : [];
const layerDirs = () => readdirSync(cacheDir).filter((n) => /^[0-9a-f]{32}$/.test(n));

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      SANDBOX_SLEEP_AFTER_MS: '60000',
      EGRESS_ALLOW_PRIVATE_HOSTS: REGISTRIES.join(','),
    },
  });
  cacheDir = join(t.dataDir, 'sandboxes', 'packages');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('environment packages', () => {
  it('pip, npm and apt packages are usable from bash; the layer is read-only; two sessions share one layer built once', async () => {
    const packages = { type: 'packages' as const, pip: ['six'], npm: ['is-odd'], apt: ['hello'] };
    const env = await t.client.beta.environments.create({
      name: 'with-packages',
      config: { type: 'cloud', packages },
    } as any);
    const command = [
      `python3 -c "import six; print('six-ok', six.__name__)"`,
      `node -e "console.log('is-odd-ok', require('is-odd')(3))"`,
      'hello',
      'touch /opt/agentfleet/packages/planted 2>/dev/null && echo WRITABLE || echo read-only-ok',
    ].join('; ');
    // two sessions at once: both wait for one build
    const [a, b] = await Promise.all([
      bashTurn(env.id, 'pkg-model-a', command),
      bashTurn(env.id, 'pkg-model-b', command),
    ]);
    for (const r of [a, b]) {
      expect(r.isError, r.text).toBe(false);
      expect(r.text).toContain('six-ok six');
      expect(r.text).toContain('is-odd-ok true');
      expect(r.text).toContain('Hello, world!');
      expect(r.text).toContain('read-only-ok');
      expect(r.text).not.toContain('WRITABLE');
      expect(r.seen.some((e) => e.type === 'session.error')).toBe(false);
    }
    expect(builds()).toHaveLength(1);
    expect(layerDirs()).toHaveLength(1);
    expect(readdirSync(join(cacheDir, '.staging'))).toEqual([]);

    // another environment with the same lists (other order): the same layer, no new build
    const same = await t.client.beta.environments.create({
      name: 'same-packages',
      config: { type: 'cloud', packages: { apt: ['hello'], npm: ['is-odd'], pip: ['six', 'six'] } },
    } as any);
    const c = await bashTurn(same.id, 'pkg-model-c', command);
    expect(c.text).toContain('six-ok six');
    expect(builds()).toHaveLength(1);
    expect(layerDirs()).toHaveLength(1);
  }, 300_000);

  it('a nonexistent package ends the sandbox start with session.error naming it; nothing enters the cache', async () => {
    const before = layerDirs().length;
    const env = await t.client.beta.environments.create({
      name: 'broken-packages',
      config: { type: 'cloud', packages: { pip: ['agentfleet-no-such-package-4711'] } },
    } as any);
    const r = await bashTurn(env.id, 'pkg-model-d', 'echo never-ran');
    expect(r.isError).toBe(true);
    expect(r.text).not.toContain('never-ran');
    expect(r.text).toContain("pip package 'agentfleet-no-such-package-4711'");
    const errors = r.seen.filter((e) => e.type === 'session.error');
    expect(errors).toHaveLength(1);
    expect(errors[0].error.message).toContain("pip package 'agentfleet-no-such-package-4711'");
    expect(errors[0].error.message).toContain('No matching distribution');
    expect(errors[0].error.retry_status.type).toBe('terminal');
    expect(layerDirs()).toHaveLength(before);
    expect(readdirSync(join(cacheDir, '.staging'))).toEqual([]);
  }, 180_000);

  it('gem without a gem tool on this host is a clear error naming the manager and the package', async () => {
    const env = await t.client.beta.environments.create({
      name: 'gems',
      config: { type: 'cloud', packages: { gem: ['rake'] } },
    } as any);
    const r = await bashTurn(env.id, 'pkg-model-e', 'echo never-ran');
    expect(r.isError).toBe(true);
    const err = r.seen.find((e) => e.type === 'session.error');
    expect(err?.error.message).toContain("installing gem package 'rake' failed");
    expect(err?.error.message).toContain('gem is not installed on this host');
  }, 180_000);

  it('invalid package names are refused with 400 naming the field, at create and update', async () => {
    const bad: Array<[Record<string, string[]>, string]> = [
      [{ pip: ['--index-url=http://evil.example/simple'] }, 'pip[0]'],
      [{ pip: ['six', '-e .'] }, 'pip[1]'],
      [{ npm: ['../../etc/passwd'] }, 'npm[0]'],
      [{ npm: ['git+https://evil.example/x.git'] }, 'npm[0]'],
      [{ apt: ['hello; rm -rf /'] }, 'apt[0]'],
      [{ go: ['example.com/../x@v1'] }, 'go[0]'],
      [{ cargo: ['x'.repeat(300)] }, 'cargo[0]'],
      [{ gem: ['--source=http://evil'] }, 'gem[0]'],
    ];
    for (const [lists, field] of bad) {
      const res = await t.http('/v1/environments', {
        method: 'POST',
        headers: BETA,
        json: { name: 'bad', config: { type: 'cloud', packages: lists } },
      });
      expect(res.status, JSON.stringify(lists)).toBe(400);
      const body = (await res.json()) as any;
      expect(body.error.message).toContain(`config.packages.${field}`);
    }
    const tooMany = await t.http('/v1/environments', {
      method: 'POST',
      headers: BETA,
      json: { name: 'bad', packages: { pip: Array.from({ length: 65 }, (_, i) => `p${i}`) } },
    });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as any).error.message).toContain('packages.pip');

    // through the SDK, on update: a typed 400, the environment unchanged
    const env = await t.client.beta.environments.create({
      name: 'good',
      config: { type: 'cloud', packages: { pip: ['requests==2.31.0', 'six'] } },
    } as any);
    const err = await t.client.beta.environments
      .update(env.id, {
        config: { type: 'cloud', packages: { npm: ['--registry=http://evil'] } },
      } as any)
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(String(err.message)).toContain('config.packages.npm[0]');
    const still = (await t.client.beta.environments.retrieve(env.id)) as any;
    expect(still.config.packages.pip).toEqual(['requests==2.31.0', 'six']);
    expect(still.config.packages.npm).toEqual([]);
  });
});
