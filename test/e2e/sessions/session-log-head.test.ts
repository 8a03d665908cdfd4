/**
 * The log head and the session status derived from it: an append writes the events, then the
 * session's head (one transaction on the embedded store, two writes on MongoDB). A client that
 * read the idle event never reads the session running, and a head left behind its events (a
 * crash between the two writes) is repaired by the next append. On a store with transactions
 * the turn's idle also clears the session's pending flag in the same write. A caller's fresh read
 * of the session places an unfenced append without another read, and a stale one only collides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { json, sessionHelpers } from '../../kit/sessionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform();
  envId = (await t.client.beta.environments.create({ name: 'log-head' })).id;
});
afterAll(async () => {
  await t?.close();
});

const { agentWithModel, say, untilIdle } = sessionHelpers(() => t);

describe('log head', () => {
  it('a session whose idle event is in the log reads idle before the head update lands', async () => {
    // An append is two writes: the events, then the session head (last_seq, idle_seq). A reader
    // that saw the idle event in the log must not see the session running in between. The window
    // is made here by writing the turn's run record and idle event without the head update.
    const { agent } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const c = t.server.platform.collections;
    // Held like a running worker holds it, so the recovery scan leaves the run record alone.
    const leases = t.server.platform.coordination.leases;
    const lease = (await leases.acquire(`session:${s.id}`, 'test-worker', 60_000))!;
    expect(lease).toBeTruthy();
    const doc = (await c.sessions.get('tnt_default', s.id))!;
    const start = doc.last_seq + 1;
    await c.runs.updateOne(
      'tnt_default',
      { _id: s.id },
      {
        $set: {
          run_id: 'run_window',
          owner: 'test',
          token: 0,
          start_seq: start,
          input_to: doc.input_seq,
          started_at: new Date().toISOString(),
        },
      },
      { upsert: true },
    );
    const event = (seq: number, type: string) => ({
      _id: `sevt_window_${seq}`,
      tenant_id: 'tnt_default',
      session_id: s.id,
      seq,
      type,
      payload: {},
      created_at: new Date().toISOString(),
    });
    await c.events.insertMany('tnt_default', [event(start, 'session.status_running')]);
    await c.sessions.updateOne('tnt_default', { _id: s.id }, { $max: { last_seq: start } });
    expect((await t.client.beta.sessions.retrieve(s.id)).status).toBe('running');
    const listed = async () =>
      (await t.client.beta.sessions.list({ agent_id: agent.id } as any)).data.find(
        (x) => x.id === s.id,
      )!.status;
    expect(await listed()).toBe('running');
    // The idle event is appended; the head (and idle_seq) is not yet.
    await c.events.insertMany('tnt_default', [event(start + 1, 'session.status_idle')]);
    expect((await t.client.beta.sessions.retrieve(s.id)).status).toBe('idle');
    expect(await listed()).toBe('idle');
    const byStatus = await json(
      await t.http(`/v1/sessions?agent_id=${agent.id}&statuses[]=running`),
    );
    expect(byStatus.body.data.map((x: any) => x.id)).not.toContain(s.id);
    await c.runs.deleteOne('tnt_default', { _id: s.id });
    await leases.release(lease);
  });

  it('a log head left behind its events (a crash between the two writes) is repaired by the next append', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const c = t.server.platform.collections;
    const before = (await c.sessions.get('tnt_default', s.id))!.last_seq;
    // The events of an append whose head update never happened.
    await c.events.insertMany('tnt_default', [
      {
        _id: 'sevt_orphaned_head',
        session_id: s.id,
        seq: before + 1,
        type: 'agent.message',
        payload: { content: [{ type: 'text', text: 'written before the crash' }] },
        created_at: new Date().toISOString(),
      },
    ]);
    t.model.script(model, { steps: [{ text: 'answered' }] });
    await say(s.id, 'after the crash');
    const events = await untilIdle(s.id);
    expect(events.map((e: any) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1));
    expect(events[before]).toMatchObject({ id: 'sevt_orphaned_head', seq: before + 1 });
    expect(events[before + 1]).toMatchObject({ type: 'user.message', seq: before + 2 });
    const head = (await c.sessions.get('tnt_default', s.id))!.last_seq;
    expect(head).toBe(events.at(-1).seq);
  });

  it('on a store with transactions the idle and the cleared pending flag are one write', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const c = t.server.platform.collections;
    const atomic = !!(await c.sessions.handle('tnt_default')).store.transaction;
    // Read the session as soon as the idle is durable (hooks run before the append returns).
    const atIdle: boolean[] = [];
    t.server.platform.events.onAppended(async (tenant, sid, written) => {
      if (sid === s.id && written.some((e) => e.type === 'session.status_idle'))
        atIdle.push((await c.sessions.get(tenant, sid))!.pending === true);
    });
    t.model.script(model, { steps: [{ text: 'ok' }] });
    await say(s.id, 'hi');
    await untilIdle(s.id);
    await waitFor(async () => atIdle.length === 1, 5000);
    // Embedded: in the idle's own transaction. MongoDB: the separate compare-and-set after it.
    if (atomic) expect(atIdle).toEqual([false]);
    await waitFor(async () => (await c.sessions.get('tnt_default', s.id))!.pending === false, 5000);
  });

  it('an append placed by a stale read of the session collides, re-reads and stays gap-free', async () => {
    const s = await t.client.beta.sessions.create({
      agent: (await agentWithModel()).agent.id,
      environment_id: envId,
    });
    const c = t.server.platform.collections;
    const log = t.server.platform.events;
    const T = 'tnt_default';
    const msg = (text: string) => ({
      type: 'agent.message',
      payload: { content: [{ type: 'text', text }] },
    });
    const stale = (await c.sessions.get(T, s.id))!;
    await log.append(T, s.id, [msg('one'), msg('two')]);
    // A head behind its events sends any store down the two-write path (MongoDB always takes it).
    const behind = async (id: string) => {
      const head = (await c.sessions.get(T, s.id))!.last_seq;
      await c.events.insertMany(T, [
        {
          _id: id,
          session_id: s.id,
          seq: head + 1,
          type: 'agent.message',
          payload: {},
          created_at: new Date().toISOString(),
        },
      ]);
    };
    await behind('sevt_behind_1');
    const [three] = await log.append(T, s.id, [msg('three')], { readSession: stale });
    const seqs = (await log.all(T, s.id)).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(three!.seq).toBe(seqs.at(-1));
    expect((await c.sessions.get(T, s.id))!.last_seq).toBe(three!.seq);
    // A fenced append is checked against the stored session, whatever it was handed (here an
    // exact head with an old fence).
    await c.sessions.updateOne(T, { _id: s.id }, { $max: { fence: 5 } });
    const handed = { ...(await c.sessions.get(T, s.id))!, fence: 0 };
    await expect(
      log.append(T, s.id, [msg('stale writer')], { fence: 1, readSession: handed }),
    ).rejects.toThrow(/superseded/);
    expect(
      (await log.all(T, s.id)).some(
        (e) => (e.payload as any).content?.[0]?.text === 'stale writer',
      ),
    ).toBe(false);
  });
});
