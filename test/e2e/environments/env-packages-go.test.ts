/**
 * Environment `packages` for go, installed for real (core/src/sandbox/packages/builders.ts: go
 * install with GOBIN in the layer, the module fetched through proxy.golang.org only): the
 * installed binary runs from bash in the session. Slow (a Go build in the confined build
 * sandbox, 45 to 100 s on 2 busy cores), so it has a file of its own.
 * This machine resolves the registries to a TEST-NET address: the test opens exactly the Go
 * proxy's name the way an operator would (EGRESS_ALLOW_PRIVATE_HOSTS).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, runTurn } from '../../kit/turnHelpers.js';

const MODEL = 'pkg-go-model';
let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'local', EGRESS_ALLOW_PRIVATE_HOSTS: 'proxy.golang.org' },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

it('a go package of the environment is installed and runs from bash in the session', async () => {
  const env = await t.client.beta.environments.create({
    name: 'go-packages',
    config: {
      type: 'cloud',
      packages: { type: 'packages', go: ['golang.org/x/example/hello@latest'] },
    },
  } as any);
  const agent = await t.client.beta.agents.create({
    name: 'pkg-go',
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  t.model.script(MODEL, {
    steps: [{ tool_use: { name: 'bash', input: { command: 'command -v hello; hello' } } }],
  });
  const seen = (await runTurn(t.client, sid, 'go')).events;
  const result = seen.find((e) => e.type === 'agent.tool_result');
  const text = result?.content?.[0]?.text ?? '';
  expect(result?.is_error, text).toBe(false);
  expect(text).toContain('/opt/agentfleet/packages/go/bin/hello');
  expect(text).toContain('Hello, world!');
}, 600_000);
