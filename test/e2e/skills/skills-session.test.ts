/**
 * Skills in the session, through the official SDK against an in-process platform
 * with real bubblewrap sandboxes and the scripted model (core/src/sessions/skills.ts,
 * workers/src/turn/skillPrompt.ts):
 * - the captured model request's system prompt is the agent's prompt followed by exactly
 *   `<source name="skill:{id}"><skill name="{name}">{SKILL.md body}</skill></source>` for a
 *   custom and a built-in skill, in order, on both provider protocols;
 * - the agent's bash reads /home/user/.skills/{name}/SKILL.md and runs a helper file there;
 * - a new skill version published after a session started leaves that session's prompt and
 *   mount on the pinned version, while a new session pins the new one;
 * - `agent_with_overrides.skills` replaces the agent's list for that session only;
 * - bad refs (unknown, other tenant's, unknown version, bare string, duplicate name, a 21st
 *   skill) are 400s naming the ref;
 * - a skill deleted between session create and the first turn ends the turn with a terminal
 *   session.error naming it, before any model call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
const ANTHROPIC = 'skills-anthropic';
const OPENAI = 'skills-openai';

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local', ANTHROPIC_API_KEY: '' } });
  await addModelCard(t, ANTHROPIC);
  await addModelCard(t, OPENAI, { provider: 'openai' });
  envId = (await t.client.beta.environments.create({ name: 'skills-session' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const skillMd = (name: string, body: string) =>
  `---\nname: ${name}\ndescription: the ${name} skill for tests\n---\n${body}`;

/** Creates a custom skill from JSON files; answers its id and latest version. */
async function createSkill(
  files: Record<string, string>,
  key?: string,
): Promise<{ id: string; latest_version: string }> {
  const res = await t.http('/v1/skills', {
    method: 'POST',
    headers: BETA,
    ...(key ? { key } : {}),
    json: { files: Object.entries(files).map(([filename, content]) => ({ filename, content })) },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { id: string; latest_version: string };
}

async function newVersion(id: string, files: Record<string, string>): Promise<string> {
  const res = await t.http(`/v1/skills/${id}/versions`, {
    method: 'POST',
    headers: BETA,
    json: { files: Object.entries(files).map(([filename, content]) => ({ filename, content })) },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { version: string }).version;
}

/** The SKILL.md body of a skill version as served, frontmatter removed (as the spec inlines it). */
async function servedBody(id: string): Promise<string> {
  const res = await t.http(`/v1/skills/${id}/files/SKILL.md`, { headers: BETA });
  expect(res.status).toBe(200);
  const text = await res.text();
  const m = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  return text.slice(m![0].length);
}

const wrapper = (id: string, name: string, body: string) =>
  `<source name="skill:${id}"><skill name="${name}">${body}</skill></source>`;

/** The system text of the last request the scripted model saw for `model` (either protocol). */
function lastSystem(model: string): string | undefined {
  const req = t.model.requests.filter((r) => r.model === model).at(-1)!;
  if (req.protocol === 'anthropic') return req.body.system;
  const first = req.body.messages[0];
  return first?.role === 'system' ? first.content : undefined;
}

const BODY_V1 = 'Notes helper, version one.\nRun scripts/hello.sh to greet.';
const BODY_V2 = 'Notes helper, version two.\nRun scripts/hello.sh to greet.';

describe('skills in the session', () => {
  let custom: { id: string; latest_version: string };

  it('inlines the exact wrapper for a custom and a built-in skill, on both protocols; bash reads the mounted files', async () => {
    custom = await createSkill({
      'notes-helper/SKILL.md': skillMd('notes-helper', BODY_V1),
      'notes-helper/scripts/hello.sh': 'echo hello from the helper v1\n',
    });
    const pdfBody = await servedBody('pdf');
    for (const model of [ANTHROPIC, OPENAI]) {
      const agent = await t.client.beta.agents.create({
        name: `skilled-${model}`,
        model,
        system: 'the agent prompt',
        tools: [{ type: 'agent_toolset_20260401' }],
        skills: [
          { type: 'custom', skill_id: custom.id },
          { type: 'anthropic', skill_id: 'pdf' },
        ],
      });
      // The agent keeps the refs as given (no version: latest).
      expect(agent.skills).toEqual([
        { type: 'custom', skill_id: custom.id, version: 'latest' },
        { type: 'anthropic', skill_id: 'pdf', version: 'latest' },
      ]);
      const session = await t.client.beta.sessions.create({
        agent: agent.id,
        environment_id: envId,
      });
      // The session shows the versions it pinned.
      expect(session.agent.skills[0]).toEqual({
        type: 'custom',
        skill_id: custom.id,
        version: custom.latest_version,
      });
      expect(session.agent.skills[1]!.version).toMatch(/^\d+$/);
      t.model.script(
        model,
        call('bash', {
          command:
            'cat /home/user/.skills/notes-helper/SKILL.md && echo && sh /home/user/.skills/notes-helper/scripts/hello.sh && head -n 2 /home/user/.skills/pdf/SKILL.md',
        }),
        say('done'),
      );
      const turn = await runTurn(t.client, session.id, 'use your skills');
      expect(turn.toolResults.map((r) => r.is_error)).toEqual([false]);
      const out = turn.toolResults[0].content[0].text as string;
      expect(out).toContain(skillMd('notes-helper', BODY_V1));
      expect(out).toContain('hello from the helper v1');
      expect(out).toContain('---\nname: pdf\n');
      expect(lastSystem(model)).toBe(
        [
          'the agent prompt',
          wrapper(custom.id, 'notes-helper', BODY_V1),
          wrapper('pdf', 'pdf', pdfBody),
        ].join('\n\n'),
      );
    }
  }, 120_000);

  it('a running session keeps its pinned version; a new session gets the new one', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'pinning',
      model: ANTHROPIC,
      tools: [{ type: 'agent_toolset_20260401' }],
      skills: [{ type: 'custom', skill_id: custom.id }],
    });
    const old = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const catHelper = call('bash', {
      command: 'sh /home/user/.skills/notes-helper/scripts/hello.sh',
    });
    t.model.script(ANTHROPIC, catHelper, say('ok'));
    await runTurn(t.client, old.id, 'first');
    const v2 = await newVersion(custom.id, {
      'notes-helper/SKILL.md': skillMd('notes-helper', BODY_V2),
      'notes-helper/scripts/hello.sh': 'echo hello from the helper v2\n',
    });
    expect(v2 > custom.latest_version).toBe(true);
    // The agent still says latest; an agent update does not move the running session either.
    await t.client.beta.agents.update(agent.id, { version: 1, system: 'updated prompt' });

    t.model.script(ANTHROPIC, catHelper, say('ok'));
    const again = await runTurn(t.client, old.id, 'second');
    expect(again.toolResults[0].content[0].text).toContain('hello from the helper v1');
    expect(lastSystem(ANTHROPIC)).toBe(wrapper(custom.id, 'notes-helper', BODY_V1));
    expect((await t.client.beta.sessions.retrieve(old.id)).agent.skills[0]!.version).toBe(
      custom.latest_version,
    );

    const fresh = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    expect(fresh.agent.skills[0]!.version).toBe(v2);
    t.model.script(ANTHROPIC, catHelper, say('ok'));
    const next = await runTurn(t.client, fresh.id, 'new session');
    expect(next.toolResults[0].content[0].text).toContain('hello from the helper v2');
    expect(lastSystem(ANTHROPIC)).toBe(
      ['updated prompt', wrapper(custom.id, 'notes-helper', BODY_V2)].join('\n\n'),
    );
  }, 120_000);

  it('agent_with_overrides.skills replaces the list for that session only', async () => {
    const agent = await t.client.beta.agents.create({
      name: 'override-skills',
      model: ANTHROPIC,
      system: 'base',
      skills: [{ type: 'custom', skill_id: custom.id }],
    });
    const session = await t.client.beta.sessions.create({
      agent: {
        type: 'agent_with_overrides',
        id: agent.id,
        skills: [{ type: 'anthropic', skill_id: 'pdf' }],
      },
      environment_id: envId,
    });
    expect(session.agent.skills.map((s) => s.skill_id)).toEqual(['pdf']);
    t.model.script(ANTHROPIC, say('ok'));
    await runTurn(t.client, session.id, 'hi');
    expect(lastSystem(ANTHROPIC)).toBe(
      ['base', wrapper('pdf', 'pdf', await servedBody('pdf'))].join('\n\n'),
    );
    expect((await t.client.beta.agents.retrieve(agent.id)).skills.map((s) => s.skill_id)).toEqual([
      custom.id,
    ]);
    const cleared = await t.client.beta.sessions.create({
      agent: { type: 'agent_with_overrides', id: agent.id, skills: [] },
      environment_id: envId,
    });
    expect(cleared.agent.skills).toEqual([]);
    t.model.script(ANTHROPIC, say('ok'));
    await runTurn(t.client, cleared.id, 'hi');
    expect(lastSystem(ANTHROPIC)).toBe('base');
  }, 60_000);

  it('bad refs are 400s naming the ref; a 21st skill is refused', async () => {
    const other = await t.newTenant('skills-other');
    const foreign = await createSkill(
      { 'SKILL.md': skillMd('foreign-skill', 'not yours') },
      other.apiKey,
    );
    const twin = await createSkill({ 'SKILL.md': skillMd('twin-skill', 'twin') });
    const refs = (skills: unknown[]) => ({ name: 'bad', model: ANTHROPIC, skills });
    const cases: Array<[unknown[], string]> = [
      [[{ type: 'custom', skill_id: 'skill_nope' }], 'skills[0].skill_id'],
      [[{ type: 'custom', skill_id: foreign.id }], 'skills[0].skill_id'],
      [[{ type: 'custom', skill_id: custom.id, version: '123' }], 'skills[0].version'],
      [[{ type: 'anthropic', skill_id: 'pdf' }, 'xlsx'], 'skills[1]'],
      [
        [
          { type: 'custom', skill_id: twin.id },
          { type: 'custom', skill_id: twin.id, version: twin.latest_version },
        ],
        'skills[1].skill_id',
      ],
      [Array.from({ length: 21 }, () => ({ type: 'anthropic', skill_id: 'pdf' })), 'skills'],
    ];
    const agent = await t.client.beta.agents.create({ name: 'ok', model: ANTHROPIC });
    for (const [skills, field] of cases) {
      for (const [path, body, named] of [
        ['/v1/agents', refs(skills), field],
        [`/v1/agents/${agent.id}`, { version: 1, skills }, field],
        [
          '/v1/sessions',
          {
            agent: { type: 'agent_with_overrides', id: agent.id, skills },
            environment_id: envId,
          },
          `agent.${field}`,
        ],
      ] as const) {
        const res = await t.http(path, { method: 'POST', headers: BETA, json: body });
        const text = await res.text();
        expect(res.status, `${path} ${text}`).toBe(400);
        expect(JSON.parse(text).error.details.field, text).toBe(named);
      }
    }
    expect((await t.client.beta.agents.retrieve(agent.id)).version).toBe(1);
  }, 60_000);

  it('a skill deleted between session create and the first turn fails with a clear session.error', async () => {
    const doomed = await createSkill({ 'SKILL.md': skillMd('doomed-skill', 'gone soon') });
    const agent = await t.client.beta.agents.create({
      name: 'doomed',
      model: ANTHROPIC,
      tools: [{ type: 'agent_toolset_20260401' }],
      skills: [{ type: 'custom', skill_id: doomed.id }],
    });
    const session = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const del = await t.http(`/v1/skills/${doomed.id}`, { method: 'DELETE', headers: BETA });
    expect(del.status).toBe(200);
    const before = t.model.requests.length;
    const turn = await runTurn(t.client, session.id, 'hi');
    const error = turn.events.find((e) => e.type === 'session.error');
    expect(error?.error.message).toMatch(
      new RegExp(`skill ${doomed.id} version ${doomed.latest_version} .*could not be loaded`),
    );
    expect(error?.error.retry_status).toEqual({ type: 'terminal' });
    expect(t.model.requests.length).toBe(before);
  }, 60_000);
});
