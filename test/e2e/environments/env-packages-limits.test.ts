/**
 * The operator's cap on a package layer (SANDBOX_PACKAGES_MAX_MB, core/src/sandbox/packages/
 * build.ts): a layer over it is refused with a session.error giving its size and the cap, and
 * nothing enters the cache; a layer under it is mounted. Real registry (PyPI), real bwrap.
 * As in test/e2e/environments/env-packages.test.ts, the registries' names are opened the way an operator would
 * (this machine resolves them to a TEST-NET address).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';

let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      SANDBOX_PACKAGES_MAX_MB: '1',
      EGRESS_ALLOW_PRIVATE_HOSTS: 'pypi.org,files.pythonhosted.org',
    },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function bashTurn(pip: string[], modelId: string, command: string) {
  await addModelCard(t, modelId);
  const env = await t.client.beta.environments.create({
    name: `cap-${modelId}`,
    config: { type: 'cloud', packages: { type: 'packages', pip } },
  } as any);
  const agent = await t.client.beta.agents.create({
    name: modelId,
    model: modelId,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  t.model.script(modelId, { steps: [{ tool_use: { name: 'bash', input: { command } } }] });
  const seen = (await runTurn(t.client, sid, 'go')).events;
  const result = seen.find((e) => e.type === 'agent.tool_result');
  return { seen, text: result?.content?.[0]?.text ?? '', isError: result?.is_error };
}

const layers = () =>
  readdirSync(join(t.dataDir, 'sandboxes', 'packages')).filter((n) => /^[0-9a-f]{32}$/.test(n));

it('a layer over SANDBOX_PACKAGES_MAX_MB is refused with session.error; one under it is mounted', async () => {
  const big = await bashTurn(['requests'], 'cap-big', 'echo never-ran');
  expect(big.isError).toBe(true);
  const err = big.seen.find((e) => e.type === 'session.error');
  expect(err?.error.message).toMatch(
    /packages take \d+ MB, over the 1 MB a package layer may take/,
  );
  expect(layers()).toEqual([]);
  expect(readdirSync(join(t.dataDir, 'sandboxes', 'packages', '.staging'))).toEqual([]);

  const small = await bashTurn(['six'], 'cap-small', `python3 -c "import six; print('six-ok')"`);
  expect(small.isError, small.text).toBe(false);
  expect(small.text).toContain('six-ok');
  expect(layers()).toHaveLength(1);
}, 240_000);
