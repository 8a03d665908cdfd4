/**
 * The skill mount on the Nomad driver (against the Nomad API fake, which runs the task on this
 * machine): a pinned skill's files are written at /home/user/.skills/{name}/ at warmup, where
 * the agent's bash reads SKILL.md and runs a helper file, as on the local driver
 * (test/e2e/skills/skills-session.test.ts). Proves /home/user is writable in the Nomad task spec.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { startNomadFake } from '../../kit/nomad/fake.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'skills-nomad';
let t: TestPlatform;
let closeFake: (() => Promise<void>) | null = null;

beforeAll(async () => {
  const fake = await startNomadFake({ node: { cpuMhz: 16_000, memoryMb: 65_536 } });
  closeFake = fake.close;
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'nomad',
      NOMAD_ADDR: fake.address,
      SANDBOX_NOMAD_PROXY_ADVERTISE: '127.0.0.1',
      ANTHROPIC_API_KEY: '',
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await closeFake?.();
});

describe('skills on the Nomad driver', () => {
  it('mounts the pinned skill at /home/user/.skills/{name}/', async () => {
    const md = '---\nname: nomad-helper\ndescription: a skill for the nomad test\n---\nBody.';
    const res = await t.http('/v1/skills', {
      method: 'POST',
      headers: BETA,
      json: {
        files: [
          { filename: 'SKILL.md', content: md },
          { filename: 'bin/greet.sh', content: 'echo greetings from nomad\n' },
        ],
      },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const skill = (await res.json()) as { id: string };
    const envId = (await t.client.beta.environments.create({ name: 'skills-nomad' })).id;
    const agent = await t.client.beta.agents.create({
      name: 'nomad-skilled',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
      skills: [{ type: 'custom', skill_id: skill.id }],
    });
    const session = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(
      MODEL,
      call('bash', {
        command:
          'cat /home/user/.skills/nomad-helper/SKILL.md && echo && sh /home/user/.skills/nomad-helper/bin/greet.sh',
      }),
      say('done'),
    );
    const turn = await runTurn(t.client, session.id, 'read the skill');
    expect(turn.toolResults.map((r) => r.is_error)).toEqual([false]);
    const out = turn.toolResults[0].content[0].text as string;
    expect(out).toContain(md);
    expect(out).toContain('greetings from nomad');
  }, 120_000);
});
