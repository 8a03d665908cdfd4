/**
 * Environment `packages` on the Nomad driver (against the Nomad API fake, test/kit/nomad/, which
 * runs the task on this machine): the worker builds the layer (core/src/sandbox/packages/) and
 * the task's bwrap binds it read-only from the same host path, so a pip package is importable
 * from bash in the allocation. This proves the path-sharing design only: a real Nomad client
 * must see the worker's sandbox root at the same path (as it must already see node and the
 * sandbox scripts); the layer is not shipped as an artifact.
 *
 * As in test/e2e/environments/env-packages.test.ts, this machine resolves the registries to a TEST-NET address:
 * the test opens exactly those names (EGRESS_ALLOW_PRIVATE_HOSTS).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';
import { startNomadFake } from '../../kit/nomad/fake.js';

const MODEL = 'pkg-nomad-model';
let t: TestPlatform;
let closeFake: (() => Promise<void>) | null = null;

beforeAll(async () => {
  const fake = await startNomadFake({ node: { cpuMhz: 16_000, memoryMb: 65_536 } });
  closeFake = fake.close;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'nomad',
      NOMAD_ADDR: fake.address,
      SANDBOX_SLEEP_AFTER_MS: '60000',
      EGRESS_ALLOW_PRIVATE_HOSTS: 'pypi.org,files.pythonhosted.org',
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await closeFake?.();
});

it('a pip package of the environment is importable from bash in the Nomad task; the layer is read-only there', async () => {
  const env = await t.client.beta.environments.create({
    name: 'nomad-packages',
    config: { type: 'cloud', packages: { type: 'packages', pip: ['six'] } },
  } as any);
  const agent = await t.client.beta.agents.create({
    name: 'pkg-nomad',
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  const command = [
    `python3 -c "import six; print('six-ok', six.__name__)"`,
    'touch /opt/agentfleet/packages/planted 2>/dev/null && echo WRITABLE || echo read-only-ok',
  ].join('; ');
  t.model.script(MODEL, { steps: [{ tool_use: { name: 'bash', input: { command } } }] });
  const seen = (await runTurn(t.client, sid, 'go')).events;
  const result = seen.find((e) => e.type === 'agent.tool_result');
  const text = result?.content?.[0]?.text ?? '';
  expect(result?.is_error, text).toBe(false);
  expect(text).toContain('six-ok six');
  expect(text).toContain('read-only-ok');
  expect(text).not.toContain('WRITABLE');
}, 240_000);
