/**
 * Memory stores in sessions, through the official TypeScript SDK
 * against a real bubblewrap sandbox and the scripted model:
 * - a `memory_store` resource mounts the store at /mnt/memory/<name> (the SDK's documented
 *   path), every memory a file with its content, and the system prompt names the mount; a
 *   turn's bash reads one, writes a new one and
 *   edits another, and once the turn is idle the memory API shows the new memory and a new
 *   version of the edited one, made by the session (`session_actor`);
 * - a memory changed through the API while the session has it mounted: the session's edit is a
 *   conflict, reported as a `memory_conflict` session.warning naming the path and the hashes,
 *   and nothing is lost (the API's content stays, the session's is saved at the sibling path);
 * - `read_only` access: nothing is written back, and a `memory_not_written` warning says so;
 * - the agent's `memory_store_id` mounts its store (read_write);
 * - bad references (unknown, another tenant's, archived, attached twice) are 400s naming
 *   `resources[i].memory_store_id`; a store deleted after create fails the warmup.
 */
import { createHash } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session } from '@agentfleet/schemas';
import { conforms, conformsEvent } from '../../kit/contractShapesHelpers.js';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'memory-session-model';
const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

let t: TestPlatform;
let client: Anthropic;
let apiKey: string;
let envId: string;
let agentId: string;

beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  ({ client, apiKey } = await t.newTenant('memory-session'));
  await addModelCard(t, MODEL, { key: apiKey });
  envId = (await client.beta.environments.create({ name: 'memory-session' })).id;
  agentId = (
    await client.beta.agents.create({
      name: 'memory-session',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function storeWith(name: string, memories: Record<string, string>) {
  const store = await client.beta.memoryStores.create({ name });
  const ids: Record<string, string> = {};
  for (const [path, content] of Object.entries(memories))
    ids[path] = (await client.beta.memoryStores.memories.create(store.id, { path, content })).id;
  return { id: store.id, ids };
}

async function contents(storeId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const m of client.beta.memoryStores.memories.list(storeId, { view: 'full' } as any)) {
    const item = m as any;
    if (item.type === 'memory') out[item.path] = item.content;
  }
  return out;
}

/** session.warning is an extension event: not on the default stream, always in the event list. */
async function warnings(sid: string): Promise<any[]> {
  const res = await t.http(`/v1/sessions/${sid}/events?limit=1000`, { key: apiKey });
  const events = ((await res.json()) as { data: any[] }).data;
  const found = events.filter((e) => e.type === 'session.warning');
  for (const w of found) conformsEvent(w, `session.warning ${w.warning}`);
  return found;
}
const bash = (command: string) => call('bash', { command });
const resultText = (turn: { toolResults: any[] }) =>
  turn.toolResults.map((r) => r.content?.[0]?.text ?? '').join('\n');

describe('memory stores mounted in a session (local sandbox)', () => {
  it('mounts at /mnt/memory/<name>; bash reads, creates and edits; the idle writes versions back', async () => {
    const store = await storeWith('Team Notes', {
      '/prefs.md': 'likes tea\n',
      '/todo.md': '- a\n',
    });
    const session = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id }],
    });
    expect(session.resources).toEqual([
      {
        type: 'memory_store',
        memory_store_id: store.id,
        access: 'read_write',
        name: 'Team Notes',
        description: '',
        instructions: null,
        mount_path: '/mnt/memory/team-notes',
      },
    ]);
    conforms(Session, session, 'session with a memory_store resource');
    const dir = '/mnt/memory/team-notes';
    t.model.script(
      MODEL,
      bash(
        `cat ${dir}/prefs.md && mkdir -p ${dir}/facts && printf 'the sky is blue\\n' > ${dir}/facts/sky.md && printf -- '- b\\n' >> ${dir}/todo.md`,
      ),
      say('noted'),
    );
    const turn = await runTurn(client, session.id, 'remember');
    expect(resultText(turn)).toContain('likes tea');
    expect(turn.idle.stop_reason.type).toBe('end_turn');
    // The system prompt tells the model where the store is mounted and how it behaves.
    const system = t.model.requests.filter((r) => r.model === MODEL).at(-1)!.body.system;
    expect(system).toContain(
      '<memory_store name="Team Notes" mount_path="/mnt/memory/team-notes" access="read_write">',
    );
    expect(system).toContain('saved to the store when your turn ends');
    expect(await warnings(session.id)).toEqual([]);

    expect(await contents(store.id)).toEqual({
      '/facts/sky.md': 'the sky is blue\n',
      '/prefs.md': 'likes tea\n',
      '/todo.md': '- a\n- b\n',
    });
    const versions: any[] = [];
    for await (const v of client.beta.memoryStores.memoryVersions.list(store.id, {
      memory_id: store.ids['/todo.md']!,
    }))
      versions.push(v);
    expect(versions.map((v) => v.operation).sort()).toEqual(['created', 'modified']);
    const modified = versions.find((v) => v.operation === 'modified');
    expect(modified.created_by).toEqual({ type: 'session_actor', session_id: session.id });
    expect(modified.content_sha256).toBe(sha('- a\n- b\n'));

    // Listed by the store it mounts.
    const listed = await client.beta.sessions.list({ memory_store_id: store.id });
    expect(listed.data.map((s) => s.id)).toEqual([session.id]);

    // A second turn that changes nothing writes nothing (the manifest holds the new base).
    t.model.script(MODEL, bash(`cat ${dir}/facts/sky.md`), say('same'));
    const again = await runTurn(client, session.id, 'read');
    expect(resultText(again)).toContain('the sky is blue');
    expect(await warnings(session.id)).toEqual([]);
    const todoVersions: any[] = [];
    for await (const v of client.beta.memoryStores.memoryVersions.list(store.id, {
      memory_id: store.ids['/todo.md']!,
    }))
      todoVersions.push(v);
    expect(todoVersions).toHaveLength(2);
  }, 120_000);

  it('a memory changed through the API meanwhile: session.warning with both hashes, nothing lost', async () => {
    const store = await storeWith('conflicts', { '/prefs.md': 'likes tea\n' });
    const session = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id }],
    });
    const file = '/mnt/memory/conflicts/prefs.md';
    t.model.script(MODEL, bash(`cat ${file}`), say('read'));
    expect(resultText(await runTurn(client, session.id, 'read'))).toContain('likes tea');
    // While the session holds the mounted version, someone updates the memory.
    await client.beta.memoryStores.memories.update(store.ids['/prefs.md']!, {
      memory_store_id: store.id,
      content: 'likes coffee\n',
    });
    t.model.script(MODEL, bash(`printf 'likes green tea\\n' > ${file}`), say('written'));
    await runTurn(client, session.id, 'write');
    const [w, ...more] = await warnings(session.id);
    expect(more).toEqual([]);
    expect(w).toMatchObject({
      warning: 'memory_conflict',
      memory_store_id: store.id,
      path: '/prefs.md',
      mounted_sha256: sha('likes tea\n'),
      current_sha256: sha('likes coffee\n'),
      agent_sha256: sha('likes green tea\n'),
    });
    expect(w.saved_path).toMatch(/^\/prefs\.md\.conflict-\d{8}T\d{6}Z$/);
    expect(w.message).toContain('/prefs.md');
    // Both contents are kept: the API's at the path, the session's at the sibling path.
    expect(await contents(store.id)).toEqual({
      '/prefs.md': 'likes coffee\n',
      [w.saved_path]: 'likes green tea\n',
    });
    // The sandbox now shows the store's state, and an unchanged turn reports nothing more.
    t.model.script(MODEL, bash(`cat ${file} /mnt/memory/conflicts${w.saved_path}`), say('ok'));
    const after = await runTurn(client, session.id, 'look');
    expect(resultText(after)).toContain('likes coffee');
    expect(resultText(after)).toContain('likes green tea');
    expect(await warnings(session.id)).toHaveLength(1);
  }, 120_000);

  it('a removed file deletes its memory; files that cannot be memories are reported, not lost', async () => {
    const store = await storeWith('cleanup', { '/old.md': 'old\n', '/keep.md': 'keep\n' });
    const session = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id }],
    });
    const dir = '/mnt/memory/cleanup';
    t.model.script(
      MODEL,
      bash(
        `rm ${dir}/old.md && head -c 110000 /dev/zero | tr '\\0' a > ${dir}/big.md && printf 'a\\000b' > ${dir}/bin.dat && echo x > "${dir}/$(printf 'tab\\there')"`,
      ),
      say('cleaned'),
    );
    const turn = await runTurn(client, session.id, 'clean');
    expect(turn.toolResults[0]?.is_error).toBe(false);
    expect(await contents(store.id)).toEqual({ '/keep.md': 'keep\n' });
    const versions: any[] = [];
    for await (const v of client.beta.memoryStores.memoryVersions.list(store.id, {
      memory_id: store.ids['/old.md']!,
    }))
      versions.push(v);
    expect(versions.map((v) => v.operation).sort()).toEqual(['created', 'deleted']);
    const ws = await warnings(session.id);
    expect(ws.map((w) => [w.warning, w.path, w.reason]).sort()).toEqual([
      ['memory_not_written', '/big.md', 'too_large'],
      ['memory_not_written', '/bin.dat', 'binary'],
      ['memory_not_written', '/tab\there', 'invalid'],
    ]);
    // Reported once: the next idle with the same files adds no warning.
    t.model.script(MODEL, bash(`ls ${dir}`), say('same'));
    const again = await runTurn(client, session.id, 'again');
    expect(resultText(again)).toContain('big.md');
    expect(await warnings(session.id)).toHaveLength(3);
  }, 120_000);

  it('read_only access: a read-only filesystem (EROFS on write, create, rename, chmod, delete) while a read_write mount of the same store in another session writes', async () => {
    const store = await storeWith('Reference', {
      '/faq.md': 'q: a\n',
      '/prefs/color.md': 'blue\n',
    });
    const session = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }],
    });
    expect(session.resources[0]).toMatchObject({ access: 'read_only' });
    const dir = '/mnt/memory/reference';
    const attempts = [
      `echo x > ${dir}/prefs/color.md`,
      `echo new > ${dir}/new.md`,
      `mkdir ${dir}/sub`,
      `mv ${dir}/faq.md ${dir}/moved.md`,
      `chmod 600 ${dir}/faq.md`,
      `rm ${dir}/prefs/color.md`,
      `ln -s faq.md ${dir}/link.md`,
    ];
    const script = attempts.map((a) => `(${a}) 2>&1; echo "exit=$?"`).join('; ');
    t.model.script(MODEL, bash(`cat ${dir}/faq.md ${dir}/prefs/color.md; ${script}`), say('tried'));
    const turn = await runTurn(client, session.id, 'try');
    const text = resultText(turn);
    expect(text).toContain('q: a');
    expect(text).toContain('blue');
    // every change fails with EROFS, none exits 0
    expect(text.match(/Read-only file system/g)?.length, text).toBe(attempts.length);
    expect(text.match(/exit=0/g)).toBeNull();
    expect(await warnings(session.id)).toEqual([]);
    expect(await contents(store.id)).toEqual({ '/faq.md': 'q: a\n', '/prefs/color.md': 'blue\n' });
    // the same store read_write in another session: the write lands
    const writer = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id, access: 'read_write' }],
    });
    t.model.script(MODEL, bash(`echo green > ${dir}/prefs/color.md`), say('wrote'));
    await runTurn(client, writer.id, 'write');
    expect((await contents(store.id))['/prefs/color.md']).toBe('green\n');
  }, 120_000);

  it("the agent's memory_store_id mounts its store read_write", async () => {
    const store = await storeWith('agent memory', { '/me.md': 'I am the agent\n' });
    const res = await t.http('/v1/agents', {
      method: 'POST',
      key: apiKey,
      json: {
        name: 'with-memory',
        model: MODEL,
        tools: [{ type: 'agent_toolset_20260401' }],
        memory_store_id: store.id,
      },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const agent = (await res.json()) as { id: string; memory_store_id: string };
    expect(agent.memory_store_id).toBe(store.id);
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    expect(session.resources).toEqual([
      expect.objectContaining({
        type: 'memory_store',
        memory_store_id: store.id,
        access: 'read_write',
        mount_path: '/mnt/memory/agent-memory',
      }),
    ]);
    const dir = '/mnt/memory/agent-memory';
    t.model.script(MODEL, bash(`cat ${dir}/me.md && echo learned > ${dir}/learned.md`), say('ok'));
    const turn = await runTurn(client, session.id, 'go');
    expect(resultText(turn)).toContain('I am the agent');
    expect(await contents(store.id)).toEqual({
      '/me.md': 'I am the agent\n',
      '/learned.md': 'learned\n',
    });
    // An unknown store on the agent is a 400 naming memory_store_id.
    const bad = await t.http('/v1/agents', {
      method: 'POST',
      key: apiKey,
      json: { name: 'bad', model: MODEL, memory_store_id: 'memstore_missing' },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.details.field).toBe('memory_store_id');
  }, 120_000);
});

describe('memory_store resource references', () => {
  it('unknown, another tenant’s, archived and twice-attached stores are 400s naming the field', async () => {
    const other = await t.newTenant('memory-session-other');
    const theirs = await other.client.beta.memoryStores.create({ name: 'theirs' });
    const archived = await client.beta.memoryStores.create({ name: 'archived' });
    await client.beta.memoryStores.archive(archived.id);
    const mine = await client.beta.memoryStores.create({ name: 'mine' });
    const cases: Array<[any[], string]> = [
      [
        [{ type: 'memory_store', memory_store_id: 'memstore_nope' }],
        'resources[0].memory_store_id',
      ],
      [[{ type: 'memory_store', memory_store_id: theirs.id }], 'resources[0].memory_store_id'],
      [[{ type: 'memory_store', memory_store_id: archived.id }], 'resources[0].memory_store_id'],
      [
        [
          { type: 'memory_store', memory_store_id: mine.id },
          { type: 'memory_store', memory_store_id: mine.id },
        ],
        'resources[1].memory_store_id',
      ],
      [
        [{ type: 'memory_store', memory_store_id: mine.id, instructions: 'x'.repeat(4097) }],
        'resources[0].instructions',
      ],
    ];
    for (const [resources, field] of cases) {
      const res = await t.http('/v1/sessions', {
        method: 'POST',
        key: apiKey,
        json: { agent: agentId, environment_id: envId, resources },
      });
      expect(res.status, field).toBe(400);
      const body = (await res.json()) as any;
      expect(body.error.details.field, JSON.stringify(resources)).toBe(field);
    }
    // Two stores with the same name get distinct mount paths.
    const twin = await client.beta.memoryStores.create({ name: 'mine' });
    const s = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [
        { type: 'memory_store', memory_store_id: mine.id },
        { type: 'memory_store', memory_store_id: twin.id, instructions: 'use me' },
      ],
    });
    expect(s.resources.map((r: any) => [r.mount_path, r.instructions])).toEqual([
      ['/mnt/memory/mine', null],
      ['/mnt/memory/mine-2', 'use me'],
    ]);
  });

  it('a store deleted after the session was created fails the warmup (nothing runs without it)', async () => {
    const store = await storeWith('short lived', { '/x.md': 'x\n' });
    const session = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [{ type: 'memory_store', memory_store_id: store.id }],
    });
    await client.beta.memoryStores.delete(store.id);
    t.model.script(MODEL, bash('echo should-not-run'), say('after'));
    const turn = await runTurn(client, session.id, 'go');
    const text = resultText(turn);
    expect(turn.toolResults[0]?.is_error).toBe(true);
    expect(text).not.toContain('should-not-run');
    expect(text).toContain(store.id);
  }, 120_000);
});
