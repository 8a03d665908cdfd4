/**
 * The memory mount on the Nomad driver (against the Nomad API fake, test/kit/nomad/): the sandbox
 * task binds its own /mnt/memory (core/src/sandbox/drivers/nomad/command.ts), the warmup mounts the
 * store there through the same sandbox agent protocol, and the write-back at idle turns a
 * bash edit into a new memory version, exactly as on the local driver
 * (test/e2e/memory/memory-session.test.ts has the full behaviour); a read_only store is a read-only bind
 * there too (EROFS inside the sandbox).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNomadFake } from '../../kit/nomad/fake.js';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'memory-nomad-model';
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
    },
  });
  await addModelCard(t, MODEL);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await closeFake?.();
});

/** A session of a new toolset agent with `storeId` attached (`access` as given). */
async function sessionWith(name: string, storeId: string, access?: 'read_only') {
  const c = t.client;
  const env = await c.beta.environments.create({ name });
  const agent = await c.beta.agents.create({
    name,
    model: MODEL,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  return c.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    resources: [{ type: 'memory_store', memory_store_id: storeId, ...(access ? { access } : {}) }],
  });
}

describe('memory stores mounted in a session (nomad driver)', () => {
  it('mounts the store at /mnt/memory/<name>; an edit becomes a new version at idle', async () => {
    const c = t.client;
    const store = await c.beta.memoryStores.create({ name: 'Nomad Notes' });
    const m = await c.beta.memoryStores.memories.create(store.id, {
      path: '/plan.md',
      content: 'step 1\n',
    });
    const session = await sessionWith('memory-nomad', store.id);
    t.model.script(
      MODEL,
      call('bash', {
        command:
          "cat /mnt/memory/nomad-notes/plan.md && echo 'step 2' >> /mnt/memory/nomad-notes/plan.md",
      }),
      say('planned'),
    );
    const turn = await runTurn(c, session.id, 'plan');
    expect(turn.toolResults[0]?.content?.[0]?.text).toContain('step 1');
    const after = await c.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: store.id });
    expect(after.content).toBe('step 1\nstep 2\n');
    expect(after.content_sha256).toBe(
      createHash('sha256').update('step 1\nstep 2\n', 'utf8').digest('hex'),
    );
  }, 180_000);

  it('a read_only store is a read-only filesystem in the task sandbox', async () => {
    const c = t.client;
    const store = await c.beta.memoryStores.create({ name: 'Nomad Ref' });
    await c.beta.memoryStores.memories.create(store.id, {
      path: '/prefs/color.md',
      content: 'blue\n',
    });
    const session = await sessionWith('memory-nomad-ro', store.id, 'read_only');
    const dir = '/mnt/memory/nomad-ref';
    t.model.script(
      MODEL,
      call('bash', {
        command: `cat ${dir}/prefs/color.md; (echo x > ${dir}/prefs/color.md) 2>&1; (rm ${dir}/prefs/color.md) 2>&1; echo done`,
      }),
      say('tried'),
    );
    const turn = await runTurn(c, session.id, 'try');
    const text = turn.toolResults[0]?.content?.[0]?.text as string;
    expect(text).toContain('blue');
    expect(text.match(/Read-only file system/g)).toHaveLength(2);
    const list = await c.beta.memoryStores.memories.list(store.id);
    const [only] = (list as any).data;
    const kept = await c.beta.memoryStores.memories.retrieve(only.id, {
      memory_store_id: store.id,
    });
    expect(kept.content).toBe('blue\n');
  }, 180_000);
});
