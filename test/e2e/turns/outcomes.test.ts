/**
 * Outcomes (SDK `user.define_outcome`, core/src/outcomes, workers/src/turn/outcome.ts) through
 * the TypeScript SDK against the scripted model, which plays the agent and the grader (a
 * grader request is told apart by its system prompt):
 * - a first attempt judged needs_revision, the grader's explanation the agent's next message,
 *   a second attempt satisfied: the events in order with the SDK's shapes, one idle at the end,
 *   the session's outcome_evaluations, the grader's usage in the session's usage; the grader's
 *   request holds the outcome, the rubric and the evidence, never the agent's system prompt;
 * - max_iterations reached: no further evaluation, one acknowledgment turn, then idle;
 * - an unreadable verdict fails the outcome, never satisfies it;
 * - a file rubric is read as text; bad define_outcome requests are 400s naming the field, and
 *   one outcome at a time;
 * - an interrupt during the grader's call ends the cycle and the outcome `interrupted`;
 * - a slow grader call sends `span.outcome_evaluation_ongoing` heartbeats inside its cycle.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toFile } from '@anthropic-ai/sdk';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, say, untilIdle } from '../../kit/turnHelpers.js';
import { apiJson } from '../../kit/integrations.js';

const MODEL = 'outcome-model';
const SYSTEM = 'You are the agent under test.';
let t: TestPlatform;
let agentId: string;
let envId: string;

const verdict = (result: string, explanation: string) =>
  say(JSON.stringify({ result, explanation }));
const isGrader = (r: any) =>
  JSON.stringify(r.body?.system ?? r.body?.messages?.[0] ?? '').includes('outcome grader');
const newSession = async () =>
  (await t.client.beta.sessions.create({ agent: agentId, environment_id: envId })).id;
const defineOutcome = (extra: Record<string, unknown> = {}) => ({
  type: 'user.define_outcome' as const,
  description: 'Write a two-line poem about the sea.',
  rubric: { type: 'text' as const, content: 'The poem has a title line.' },
  ...extra,
});
const listEvents = async (sid: string) => {
  const out: any[] = [];
  for await (const e of t.client.beta.sessions.events.list(sid, { limit: 100 })) out.push(e);
  return out;
};

beforeAll(async () => {
  t = await startPlatform({ env: { OUTCOME_HEARTBEAT_MS: '200' } });
  await addModelCard(t, MODEL);
  envId = (await t.client.beta.environments.create({ name: 'outcomes' })).id;
  agentId = (await t.client.beta.agents.create({ name: 'outcomes', model: MODEL, system: SYSTEM }))
    .id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('outcomes', () => {
  it('needs_revision, then satisfied: events, outcome_evaluations, usage and the grader’s separate context', async () => {
    const sid = await newSession();
    t.model.script(
      MODEL,
      say('The sea is wide.'),
      verdict('needs_revision', 'There is no title line.'),
      say('Title: Sea\nThe sea is wide.'),
      verdict('satisfied', 'It has a title line.'),
    );
    const from = t.model.requests.length;
    const seen = await untilIdle(t.client, sid, [defineOutcome()]);
    const types = seen
      .map((e) => e.type)
      .filter((x) => !x.startsWith('span.model') && x !== 'span.outcome_evaluation_ongoing');
    expect(types).toEqual([
      'user.define_outcome',
      'session.status_running',
      'agent.message',
      'span.outcome_evaluation_start',
      'span.outcome_evaluation_end',
      'agent.message',
      'span.outcome_evaluation_start',
      'span.outcome_evaluation_end',
      'session.status_idle',
    ]);
    const echo = seen[0];
    expect(echo).toMatchObject({
      description: 'Write a two-line poem about the sea.',
      rubric: { type: 'text', content: 'The poem has a title line.' },
      max_iterations: null,
    });
    expect(echo.outcome_id).toMatch(/^outc_/);
    const starts = seen.filter((e) => e.type === 'span.outcome_evaluation_start');
    const ends = seen.filter((e) => e.type === 'span.outcome_evaluation_end');
    expect(starts.map((e) => [e.outcome_id, e.iteration])).toEqual([
      [echo.outcome_id, 0],
      [echo.outcome_id, 1],
    ]);
    expect(
      ends.map((e) => [e.outcome_evaluation_start_id, e.iteration, e.result, e.explanation]),
    ).toEqual([
      [starts[0].id, 0, 'needs_revision', 'There is no title line.'],
      [starts[1].id, 1, 'satisfied', 'It has a title line.'],
    ]);
    for (const e of [...starts, ...ends]) expect(e.processed_at).toEqual(expect.any(String));
    expect(ends[0].usage).toMatchObject({ input_tokens: 10, output_tokens: expect.any(Number) });
    expect(seen.at(-1).stop_reason).toEqual({ type: 'end_turn' });

    const session = (await t.client.beta.sessions.retrieve(sid)) as any;
    expect(session.outcome_evaluations).toEqual([
      {
        type: 'outcome_evaluation',
        outcome_id: echo.outcome_id,
        description: 'Write a two-line poem about the sea.',
        result: 'satisfied',
        iteration: 1,
        explanation: 'It has a title line.',
        completed_at: expect.any(String),
      },
    ]);
    // Four model calls (two of the agent, two of the grader), 10 input tokens each.
    expect(session.usage.input_tokens).toBe(40);
    // GraphQL serves the same outcome state.
    const gql = await t.http('/graphql', {
      method: 'POST',
      json: {
        query: `query($id: ID!) { session(id: $id) { outcomeEvaluations { outcomeId result iteration explanation completedAt } } }`,
        variables: { id: sid },
      },
    });
    const gqlBody = (await gql.json()) as any;
    expect(gqlBody.data.session.outcomeEvaluations).toEqual([
      {
        outcomeId: echo.outcome_id,
        result: 'satisfied',
        iteration: 1,
        explanation: 'It has a title line.',
        completedAt: expect.any(String),
      },
    ]);
    // The cost report's ledger counts the grader's calls as kind `grader`.
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const ledger = await apiJson(
      t,
      `/v1/svc/cost_report?starting_at=${since}&session_id=${sid}&group_by=kind`,
    );
    expect(ledger.body.rows.map((r: any) => [r.kind, r.calls])).toEqual([
      ['grader', 2],
      ['turn', 2],
    ]);

    const calls = t.model.requests.slice(from).filter((r) => r.model === MODEL);
    expect(calls.map(isGrader)).toEqual([false, true, false, true]);
    const grader = JSON.stringify(calls[1]!.body.messages);
    expect(grader).toContain('Write a two-line poem about the sea.');
    expect(grader).toContain('The poem has a title line.');
    expect(grader).toContain('The sea is wide.');
    expect(JSON.stringify(calls[1]!.body)).not.toContain(SYSTEM);
    expect(calls[1]!.body.tools ?? []).toEqual([]);
    // The agent's revision request carries the grader's explanation after its first answer.
    const revision = JSON.stringify(calls[2]!.body.messages);
    expect(revision).toContain('There is no title line.');
    expect(JSON.stringify(calls[2]!.body.system)).toContain(SYSTEM);
  });

  it('on an OpenAI-protocol model card: the grader is a chat-completions call, satisfied at once', async () => {
    await addModelCard(t, 'outcome-oai', { provider: 'openai' });
    const agent = await t.client.beta.agents.create({ name: 'outcomes-oai', model: 'outcome-oai' });
    const sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId }))
      .id;
    t.model.script('outcome-oai', say('Title: Sea'), verdict('satisfied', 'titled'));
    const from = t.model.requests.length;
    const seen = await untilIdle(t.client, sid, [defineOutcome()]);
    expect(
      seen.filter((e) => e.type === 'span.outcome_evaluation_end').map((e) => e.result),
    ).toEqual(['satisfied']);
    const calls = t.model.requests.slice(from).filter((r) => r.model === 'outcome-oai');
    expect(calls.map((r) => r.protocol)).toEqual(['openai', 'openai']);
    // OpenAI carries the system prompt as the first message.
    expect(JSON.stringify(calls[1]!.body.messages[0])).toContain('outcome grader');
  });

  it('max_iterations reached: one acknowledgment turn, no further evaluation', async () => {
    const sid = await newSession();
    t.model.script(
      MODEL,
      say('attempt one'),
      verdict('needs_revision', 'no title'),
      say('attempt two'),
      verdict('needs_revision', 'still no title'),
      say('Understood: the poem still lacks a title.'),
    );
    const seen = await untilIdle(t.client, sid, [defineOutcome({ max_iterations: 2 })]);
    const ends = seen.filter((e) => e.type === 'span.outcome_evaluation_end');
    expect(ends.map((e) => e.result)).toEqual(['needs_revision', 'max_iterations_reached']);
    expect(seen.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text)).toEqual([
      'attempt one',
      'attempt two',
      'Understood: the poem still lacks a title.',
    ]);
    expect(seen.filter((e) => e.type === 'session.status_idle')).toHaveLength(1);
    const session = (await t.client.beta.sessions.retrieve(sid)) as any;
    expect(session.outcome_evaluations[0]).toMatchObject({
      result: 'max_iterations_reached',
      iteration: 1,
      explanation: 'still no title',
    });
  });

  it('an unreadable verdict fails the outcome, never satisfies it', async () => {
    const sid = await newSession();
    t.model.script(MODEL, say('done'), say('Looks great to me!'));
    const seen = await untilIdle(t.client, sid, [defineOutcome()]);
    const end = seen.find((e) => e.type === 'span.outcome_evaluation_end');
    expect(end).toMatchObject({ result: 'failed' });
    expect(end.explanation).toMatch(/could not be read/);
    const session = (await t.client.beta.sessions.retrieve(sid)) as any;
    expect(session.outcome_evaluations[0].result).toBe('failed');
  });

  it('a file rubric is read as text; bad requests are 400s naming the field; one outcome at a time', async () => {
    const sid = await newSession();
    const file = await t.client.beta.files.upload({
      file: await toFile(Buffer.from('Rubric from a file: rhymes.'), 'rubric.md', {
        type: 'text/markdown',
      }),
    });
    const png = await t.client.beta.files.upload({
      file: await toFile(Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'x.png', { type: 'image/png' }),
    });
    const send = (events: unknown[]) =>
      apiJson(t, `/v1/sessions/${sid}/events`, { method: 'POST', json: { events } });
    const bad: Array<[unknown[], string]> = [
      [[defineOutcome(), defineOutcome()], 'events[1].type'],
      [[defineOutcome({ max_iterations: 21 })], 'max_iterations'],
      [[defineOutcome({ rubric: { type: 'text', content: '' } })], 'rubric'],
      [[defineOutcome({ rubric: { type: 'file', file_id: png.id } })], 'events[0].rubric.file_id'],
      [
        [defineOutcome({ rubric: { type: 'file', file_id: 'file_nope' } })],
        'events[0].rubric.file_id',
      ],
    ];
    for (const [events, field] of bad) {
      const res = await send(events);
      expect(res.status, JSON.stringify(events)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    expect(await listEvents(sid)).toEqual([]);

    // A slow first answer keeps the outcome active while a second one is refused.
    t.model.script(
      MODEL,
      { steps: [{ delay_ms: 1500 }, { text: 'It rhymes.' }] },
      verdict('satisfied', 'rhymes'),
    );
    const stream = await t.client.beta.sessions.events.stream(sid);
    await t.client.beta.sessions.events.send(sid, {
      events: [defineOutcome({ rubric: { type: 'file', file_id: file.id } }) as any],
    });
    const again = await send([defineOutcome()]);
    expect(again.status).toBe(400);
    expect(again.body.error.message).toMatch(/events\[0\]\.type.*one outcome at a time/);
    const seen: any[] = [];
    for await (const e of stream) {
      seen.push(e);
      if (e.type === 'session.status_idle') break;
    }
    expect(seen[0].rubric).toEqual({ type: 'text', content: 'Rubric from a file: rhymes.' });
    expect(seen.find((e) => e.type === 'span.outcome_evaluation_end').result).toBe('satisfied');
    // Another tenant's file is not found either.
    const other = await t.newTenant('outcomes-other');
    const theirs = await other.client.beta.files.upload({
      file: await toFile(Buffer.from('theirs'), 'r.md', { type: 'text/markdown' }),
    });
    const foreign = await send([defineOutcome({ rubric: { type: 'file', file_id: theirs.id } })]);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.message).toContain('not found');
  });

  it('an interrupt during the grader’s call ends the outcome interrupted', async () => {
    const sid = await newSession();
    t.model.script(MODEL, say('my work'), { steps: [{ delay_ms: 5000 }, { text: '{}' }] });
    const stream = await t.client.beta.sessions.events.stream(sid);
    await t.client.beta.sessions.events.send(sid, { events: [defineOutcome() as any] });
    const seen: any[] = [];
    for await (const e of stream) {
      seen.push(e);
      if (e.type === 'span.outcome_evaluation_start')
        await t.client.beta.sessions.events.send(sid, { events: [{ type: 'user.interrupt' }] });
      if (e.type === 'session.status_idle') break;
    }
    const end = seen.find((e) => e.type === 'span.outcome_evaluation_end');
    expect(end).toMatchObject({ result: 'interrupted' });
    const session = (await t.client.beta.sessions.retrieve(sid)) as any;
    expect(session.outcome_evaluations[0].result).toBe('interrupted');
  });

  it('a slow grader call sends span.outcome_evaluation_ongoing heartbeats inside its cycle', async () => {
    const sid = await newSession();
    t.model.script(MODEL, say('Title: Sea\nwaves'), {
      steps: [
        { delay_ms: 1_200 },
        { text: JSON.stringify({ result: 'satisfied', explanation: 'titled' }) },
      ],
    });
    const seen = await untilIdle(t.client, sid, [defineOutcome()]);
    const types = seen.map((e) => e.type);
    const start = types.indexOf('span.outcome_evaluation_start');
    const end = types.indexOf('span.outcome_evaluation_end');
    const beats = seen.filter((e) => e.type === 'span.outcome_evaluation_ongoing');
    expect(beats.length).toBeGreaterThanOrEqual(3);
    for (const b of beats) {
      const at = seen.indexOf(b);
      expect(at).toBeGreaterThan(start);
      expect(at).toBeLessThan(end);
      expect(b).toMatchObject({
        outcome_id: seen[0].outcome_id,
        iteration: 0,
        processed_at: expect.any(String),
      });
      expect(b.id).toMatch(/^sevt_/);
    }
    expect(seen[end].result).toBe('satisfied');
  });
});
