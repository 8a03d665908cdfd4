/**
 * Environment `packages` for cargo, installed for real (core/src/sandbox/packages/builders.ts:
 * cargo install --root in the layer with the host's toolchain bound read-only, the crate fetched
 * through the crates.io index and download hosts only): the installed binary runs from bash in
 * the session. A Rust build in the confined build sandbox, so it has a file of its own.
 * This machine resolves the registries to a TEST-NET address: the test opens exactly the
 * crates.io names the way an operator would (EGRESS_ALLOW_PRIVATE_HOSTS).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';

const MODEL = 'pkg-cargo-model';
let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: 'index.crates.io,static.crates.io,crates.io',
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

it('a cargo package of the environment (a crate with a binary and no dependencies) is installed and runs from bash in the session', async () => {
  const env = await t.client.beta.environments.create({
    name: 'cargo-packages',
    config: {
      type: 'cloud',
      packages: { type: 'packages', cargo: ['hello_cargo'] },
    },
  } as any);
  const agent = await t.client.beta.agents.create({
    name: 'pkg-cargo',
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  t.model.script(MODEL, {
    steps: [
      { tool_use: { name: 'bash', input: { command: 'command -v hello_cargo; hello_cargo' } } },
    ],
  });
  const seen = (await runTurn(t.client, sid, 'go')).events;
  const result = seen.find((e) => e.type === 'agent.tool_result');
  const text = result?.content?.[0]?.text ?? '';
  expect(result?.is_error, text).toBe(false);
  expect(text).toContain('/opt/agentfleet/packages/cargo/bin/hello_cargo');
  expect(text).toContain('Hello, world!');
}, 600_000);
