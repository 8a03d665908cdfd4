/**
 * The recovery scan reads a batch at a time and resumes after it (workers/src/turn/recovery.ts
 * RecoveryCursor, RECOVERY_SCAN_BATCH): with more pending sessions than one batch, and the first
 * ones busy (their leases held, as a worker holds a session it drains), every session whose
 * turn command was lost is still re-driven, and so is every orphaned run record (its worker
 * died); the busy ones run once their leases are released.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { sessionHelpers } from '../../kit/sessionHelpers.js';

const TENANT = 'tnt_default';
let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({
    env: { SANDBOX_DRIVER: 'none', RECOVERY_SCAN_MS: '100', RECOVERY_SCAN_BATCH: '2' },
  });
  envId = (await t.client.beta.environments.create({ name: 'recovery-scan' })).id;
});
afterAll(async () => {
  await t?.close();
});

const { agentWithModel } = sessionHelpers(() => t);

const types = async (sid: string) =>
  ((await t.client.beta.sessions.events.list(sid, { limit: 1000 })).data as any[]).map(
    (e) => e.type,
  );

/** Six sessions in id order (the scan's order); the first two busy: their leases held. */
async function sessionsFirstTwoBusy() {
  const { agent } = await agentWithModel();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++)
    ids.push((await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id);
  ids.sort();
  const leases = t.server.platform.coordination.leases;
  const busy = await Promise.all(
    ids.slice(0, 2).map((id) => leases.acquire(`session:${id}`, 'busy-worker', 60_000)),
  );
  expect(busy.every(Boolean)).toBe(true);
  const release = async () => {
    for (const lease of busy) await leases.release(lease!);
  };
  return { ids, release };
}

/** Every one of `ids` has a session.status_idle in its log. */
const allIdle = (ids: string[]) =>
  waitFor(async () => {
    for (const id of ids) if (!(await types(id)).includes('session.status_idle')) return false;
    return true;
  }, 15_000);

describe('recovery scan', () => {
  it('reaches every pending session, batch after batch, past busy ones', async () => {
    const { ids, release } = await sessionsFirstTwoBusy();
    // Input whose turn command was lost: in the log and flagged pending, no command published.
    for (const id of ids)
      await t.server.platform.events.append(
        TENANT,
        id,
        [{ type: 'user.message', payload: { content: [{ type: 'text', text: 'hi' }] } }],
        { sessionUpdate: (last) => ({ $max: { input_seq: last }, $set: { pending: true } }) },
      );
    await allIdle(ids.slice(2));
    for (const id of ids.slice(0, 2))
      expect(await types(id)).not.toContain('session.status_running');
    await release();
    await allIdle(ids.slice(0, 2));
  });

  it('reaches every orphaned run record, batch after batch, past busy ones', async () => {
    const { ids, release } = await sessionsFirstTwoBusy();
    const { collections: c, events } = t.server.platform;
    // A turn a dead worker started: its input, its status_running and its run record.
    for (const id of ids) {
      const [input] = await events.append(TENANT, id, [
        { type: 'user.message', payload: { content: [{ type: 'text', text: 'hi' }] } },
      ]);
      const [running] = await events.append(TENANT, id, [
        { type: 'session.status_running', payload: {} },
      ]);
      await c.runs.updateOne(
        TENANT,
        { _id: id },
        {
          $set: {
            run_id: `run_dead_${id}`,
            owner: 'dead-worker',
            token: 0,
            start_seq: running!.seq,
            input_to: input!.seq,
            started_at: new Date().toISOString(),
          },
        },
        { upsert: true },
      );
    }
    await allIdle(ids.slice(2));
    for (const id of ids.slice(2)) expect(await types(id)).toContain('session.status_rescheduled');
    for (const id of ids.slice(0, 2))
      expect(await types(id)).not.toContain('session.status_rescheduled');
    await release();
    await allIdle(ids.slice(0, 2));
  });
});
