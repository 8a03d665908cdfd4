/**
 * Skills and the claimed-session bearer (gateway/src/claimedSkills.ts): a self_hosted worker
 * holding a Work claim's `sessions_token` may list the versions of, retrieve, download and read
 * the files of ONLY the skills its session's agent declares (spec claimed-session table, "agent
 * skill"); another skill, skill listing, skill metadata, create and delete are 403. The
 * platform mounts nothing for a self_hosted session (it runs no sandbox for it), so this is how
 * its worker gets the skills' files; the session still pins the versions at create, and its
 * turns (run in the control plane) send the pinned skill's wrapper in the system prompt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { sessionsToken, withBearer, workEnv } from '../../kit/workHelpers.js';
import { addModelCard, runTurn, say } from '../../kit/turnHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const skillMd = (name: string, body: string) =>
  `---\nname: ${name}\ndescription: the ${name} skill for tests\n---\n${body}`;

async function createSkill(name: string, body: string) {
  const res = await t.http('/v1/skills', {
    method: 'POST',
    headers: BETA,
    json: {
      files: [
        { filename: 'SKILL.md', content: skillMd(name, body) },
        { filename: 'scripts/run.sh', content: `echo ${name}\n` },
      ],
    },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { id: string; latest_version: string };
}

describe('claimed-session bearer and skills', () => {
  it('reads only the skills declared by the claimed session agent', async () => {
    const w = await workEnv(t, 'skills-bearer');
    const declared = await createSkill('declared-skill', 'the declared body');
    const other = await createSkill('other-skill', 'not declared');
    const agent = await t.client.beta.agents.create({
      name: 'skilled-worker',
      model: 'claude-sonnet-4-5',
      skills: [
        { type: 'custom', skill_id: declared.id },
        { type: 'anthropic', skill_id: 'xlsx' },
      ],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: w.envId,
    });
    expect(session.agent.skills.map((s) => s.skill_id)).toEqual([declared.id, 'xlsx']);
    const item = (await w.worker.beta.environments.work.poll(w.envId))!;
    expect(item.data.id).toBe(session.id);
    const token = sessionsToken(item.secret);
    const get = async (path: string) => {
      const res = await withBearer(t, token, path);
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };

    // Allowed: the declared skills' versions, a version, its zip and its files.
    const versions = await get(`/v1/skills/${declared.id}/versions`);
    expect(versions.status, versions.body.toString()).toBe(200);
    expect(JSON.parse(versions.body.toString()).data.map((v: any) => v.version)).toEqual([
      declared.latest_version,
    ]);
    const version = await get(`/v1/skills/${declared.id}/versions/${declared.latest_version}`);
    expect(version.status).toBe(200);
    const zip = await get(`/v1/skills/${declared.id}/versions/${declared.latest_version}/content`);
    expect(zip.status).toBe(200);
    expect(zip.body.subarray(0, 2).toString()).toBe('PK');
    const md = await get(`/v1/skills/${declared.id}/files/SKILL.md`);
    expect(md.status).toBe(200);
    expect(md.body.toString()).toBe(skillMd('declared-skill', 'the declared body'));
    const script = await get(`/v1/skills/${declared.id}/files/scripts/run.sh`);
    expect(script.status).toBe(200);
    expect(script.body.toString()).toBe('echo declared-skill\n');
    expect((await get('/v1/skills/xlsx/versions')).status).toBe(200);
    expect((await get('/v1/skills/xlsx/files/SKILL.md')).status).toBe(200);

    // Refused: another skill (even the tenant's own), listing, metadata, writes.
    const refused: Array<[string, string, unknown?]> = [
      ['GET', `/v1/skills/${other.id}/versions`],
      ['GET', `/v1/skills/${other.id}/versions/${other.latest_version}`],
      ['GET', `/v1/skills/${other.id}/versions/${other.latest_version}/content`],
      ['GET', `/v1/skills/${other.id}/files/SKILL.md`],
      ['GET', '/v1/skills/pdf/versions'],
      ['GET', '/v1/skills'],
      ['GET', `/v1/skills/${declared.id}`],
      ['DELETE', `/v1/skills/${declared.id}`],
      ['DELETE', `/v1/skills/${declared.id}/versions/${declared.latest_version}`],
      [
        'POST',
        `/v1/skills/${declared.id}/versions`,
        { files: [{ filename: 'SKILL.md', content: skillMd('declared-skill', 'changed') }] },
      ],
      [
        'POST',
        '/v1/skills',
        { files: [{ filename: 'SKILL.md', content: skillMd('new-skill', 'x') }] },
      ],
    ];
    for (const [method, path, body] of refused) {
      const res = await withBearer(t, token, path, {
        method,
        ...(body !== undefined
          ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
          : {}),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(403);
      expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'forbidden' } });
    }
    // Nothing was changed by the refused writes.
    const still = await t.http(`/v1/skills/${declared.id}`, { headers: BETA });
    expect(((await still.json()) as any).latest_version).toBe(declared.latest_version);
  }, 60_000);

  it('a self_hosted session inlines its pinned skills into the system prompt', async () => {
    const w = await workEnv(t, 'skills-lane');
    const model = 'skills-lane-model';
    await addModelCard(t, model);
    const skill = await createSkill('lane-skill', 'the lane body');
    const agent = await t.client.beta.agents.create({
      name: 'lane-skilled',
      model,
      system: 'lane prompt',
      skills: [{ type: 'custom', skill_id: skill.id }],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: w.envId,
    });
    t.model.script(model, say('ok'));
    await runTurn(t.client, session.id, 'hi');
    const req = t.model.requests.filter((r) => r.model === model).at(-1)!;
    expect(req.body.system).toBe(
      `lane prompt\n\n<source name="skill:${skill.id}"><skill name="lane-skill">the lane body</skill></source>`,
    );
  }, 60_000);
});
