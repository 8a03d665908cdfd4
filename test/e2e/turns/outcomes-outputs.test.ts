/**
 * The outcome grader sees the files the agent left in the session's outputs directory
 * (workers/src/turn/outcomeOutputs.ts), on a real sandbox: the agent writes a report there with
 * bash and answers only "done", so the report's text reaches the grader through the file alone;
 * the grader's request names the file by path, inside the evidence.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, say, untilIdle } from '../../kit/turnHelpers.js';

const MODEL = 'outcome-outputs-model';
let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform();
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

it('the grader judges the outputs directory’s files with the messages', async () => {
  const env = await t.client.beta.environments.create({ name: 'outputs' });
  const agent = await t.client.beta.agents.create({
    name: 'outputs',
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  } as any);
  const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  let graderText = '';
  t.model.script(
    MODEL,
    call('bash', {
      command:
        "mkdir -p /mnt/session/outputs && printf 'Title: Quarterly report\\nAll good.\\n' > /mnt/session/outputs/report.md",
    }),
    say('done'),
    {
      steps: [],
      decide: (body: any) => {
        graderText = JSON.stringify(body.messages);
        return say(
          JSON.stringify(
            graderText.includes('Title: Quarterly report')
              ? { result: 'satisfied', explanation: 'the report has a title' }
              : { result: 'needs_revision', explanation: 'no report' },
          ),
        );
      },
    },
  );
  const seen = await untilIdle(t.client, sid, [
    {
      type: 'user.define_outcome',
      description: 'Write a report to the outputs directory.',
      rubric: { type: 'text', content: 'The report has a title line.' },
      max_iterations: 1,
    } as any,
  ]);
  expect(seen.find((e) => e.type === 'span.outcome_evaluation_end')).toMatchObject({
    result: 'satisfied',
    explanation: 'the report has a title',
  });
  const evidence = JSON.parse(graderText)[0].content[0].text as string;
  expect(evidence).toContain(
    '<output_file path="/mnt/session/outputs/report.md">\nTitle: Quarterly report\nAll good.',
  );
  expect(evidence.indexOf('<output_file')).toBeGreaterThan(evidence.indexOf('<evidence>'));
  expect(evidence.indexOf('<output_file')).toBeLessThan(evidence.indexOf('</evidence>'));
}, 60_000);
