/**
 * The `span.wakeup_scheduled` extension event (schemas/src/wakeupEvents.ts; written by
 * core/src/deployments/firing.ts and workers/src/turn/wakeup.ts), through the public API:
 * - a scheduled deployment minute that fires (the platform's clock injected, its tick called as
 *   the worker's timer does) appends exactly one, reason `deployment` (the minute, the firing
 *   instant, the deployment and run ids), in the same append as, right after, the initial
 *   events; a tick again for the same minute fires nothing and appends none; a manual run gets
 *   none;
 * - a turn whose process was killed (kill -9) mid-model-call and that the restarted process's
 *   recovery resumed gets exactly one, reason `recovery` / `orphaned_turn` (the orphaned run's
 *   id, when the scan found it), right before the resumed turn's reconciliation;
 * - input whose turn command was lost (a bus that drops the session's turn commands for 1.5 s,
 *   the gateway's and the first scans') and that a later recovery scan's command re-drove gets
 *   exactly one, reason `recovery` / `pending_input`, right after that turn's
 *   session.status_running; the next turn, whose command arrived, gets none;
 * - every one matches its served schema, is listed, is left out of the default SSE stream and is
 *   streamed (replayed) with `?include=chunks`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSessionEvent, type CommandName, type CommandPayload } from '@agentfleet/schemas';
import { EmbeddedBus } from '@agentfleet/core/adapters';
import { readSse, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, say, userMessage } from '../../kit/turnHelpers.js';
import { crashPlatform, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { kill9 } from '../../kit/process.js';

const WAKE = 'span.wakeup_scheduled';
const MODEL = 'wakeup-model';
const wakes = (events: any[]) => events.filter((e) => e.type === WAKE);

/** A session's history replayed over SSE through its event `lastSeq` (base URL, key). */
async function replayed(base: string, key: string, sid: string, query: string, lastSeq: number) {
  const res = await fetch(`${base}/v1/sessions/${sid}/events/stream?replay=1${query}`, {
    headers: { 'x-api-key': key, 'anthropic-beta': 'managed-agents-2026-04-01' },
  });
  const frames = await readSse(res, (f) => f.data?.seq === lastSeq);
  await res.body?.cancel().catch(() => {});
  return frames.map((f) => f.data).filter((d) => d?.seq !== undefined);
}

/** Listed, schema-valid, absent from the default stream, present with include=chunks. */
async function expectExtension(base: string, key: string, sid: string, events: any[]) {
  for (const w of wakes(events)) validateSessionEvent(w);
  const lastSeq = events.at(-1).seq;
  const plain = await replayed(base, key, sid, '', lastSeq);
  expect(plain.some((e) => e.type === 'user.message')).toBe(true);
  expect(wakes(plain)).toEqual([]);
  const chunks = await replayed(base, key, sid, '&include=chunks', lastSeq);
  expect(wakes(chunks).map((e) => e.id)).toEqual(wakes(events).map((e) => e.id));
}

/** A bus that loses every turn command for one session until a deadline (a lost command). */
class LossyBus extends EmbeddedBus {
  lose: { sid: string; until: number } | null = null;
  lost = 0;
  override async publish<N extends CommandName>(
    name: N,
    payload: CommandPayload<N>,
    options?: { id?: string },
  ): Promise<string> {
    const l = this.lose;
    const sid = (payload as { session_id?: string }).session_id;
    if (l && name === 'session.turn.requested' && sid === l.sid && Date.now() < l.until) {
      this.lost++;
      return 'lost';
    }
    return super.publish(name, payload, options);
  }
}

describe('span.wakeup_scheduled: deployments and stranded input (one process)', () => {
  const bus = new LossyBus();
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({
      overrides: { bus },
      env: { SANDBOX_DRIVER: 'none', DEPLOYMENT_TICK_MS: '0', RECOVERY_SCAN_MS: '300' },
    });
    await addModelCard(t, MODEL);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await bus.close();
  });
  const allEvents = async (sid: string) =>
    ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[];
  const settled = (sid: string) =>
    waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.at(-1)?.type === 'session.status_idle' ? ev : null;
    }, 20_000);

  it('a scheduled minute that fires: one wake (reason deployment) with the initial events; none for a manual run', async () => {
    const c = t.client;
    let now = Date.parse('2031-03-01T08:00:10Z');
    t.server.platform.deployments.setClock(() => now);
    const env = await c.beta.environments.create({ name: 'wakeup-env' });
    const agent = await c.beta.agents.create({ name: 'wakeup-agent', model: MODEL });
    const d = await c.beta.deployments.create({
      name: 'wakes every minute',
      agent: agent.id,
      environment_id: env.id,
      initial_events: [userMessage('scheduled hello')],
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    });
    t.model.script(MODEL, say('scheduled answer'), say('manual answer'));
    now = Date.parse('2031-03-01T08:01:02Z');
    const { fired } = await t.server.platform.deployments.tick();
    const run = fired.find((r) => r.deployment_id === d.id)!;
    expect(run.session_id).toMatch(/^sess_/);
    // The same minute again: no run, no second wake.
    now = Date.parse('2031-03-01T08:01:30Z');
    expect(
      (await t.server.platform.deployments.tick()).fired.filter((r) => r.deployment_id === d.id),
    ).toEqual([]);

    const events = await settled(run.session_id!);
    const w = wakes(events);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({
      type: WAKE,
      reason: 'deployment',
      scheduled_at: '2031-03-01T08:01:00.000Z',
      woken_at: '2031-03-01T08:01:02.000Z',
      deployment_id: d.id,
      deployment_run_id: run._id,
    });
    // In the initial events' append, right after them, before the turn they start.
    const input = events.find((e) => e.type === 'user.message');
    expect(w[0].seq).toBe(input.seq + 1);
    const running = events.find((e) => e.type === 'session.status_running');
    expect(running.seq).toBeGreaterThan(w[0].seq);
    await expectExtension(t.url, t.apiKey, run.session_id!, events);

    const manual = await c.beta.deployments.run(d.id);
    const manualEvents = await settled(manual.session_id!);
    expect(manualEvents.some((e) => e.type === 'user.message')).toBe(true);
    expect(wakes(manualEvents)).toEqual([]);
  }, 30_000);

  it('input whose turn command was lost, re-driven by the recovery scan: one wake (reason recovery, pending_input)', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'wakeup-lost' });
    const agent = await c.beta.agents.create({ name: 'wakeup-lost', model: MODEL });
    const sid = (await c.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
    t.model.script(MODEL, say('re-driven answer'), say('plain answer'));
    // The gateway's command and the scans' for 1.5 s are lost; the next scan's goes through.
    bus.lose = { sid, until: Date.now() + 1_500 };
    const [input] = await c.beta.sessions.events
      .send(sid, { events: [userMessage('stranded')] })
      .then((r) => r.data as any[]);
    const events = await settled(sid);
    expect(bus.lost).toBeGreaterThanOrEqual(2); // the gateway's and at least one scan's
    const w = wakes(events);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ reason: 'recovery', detail: 'pending_input' });
    expect(w[0].run_id).toBeUndefined();
    expect(Date.parse(w[0].scheduled_at) - Date.parse(input.created_at)).toBeGreaterThanOrEqual(
      1_000,
    );
    expect(Date.parse(w[0].woken_at)).toBeGreaterThanOrEqual(Date.parse(w[0].scheduled_at));
    // In the turn's first append, right after its session.status_running.
    const running = events.filter((e) => e.type === 'session.status_running');
    expect(running).toHaveLength(1);
    expect(w[0].seq).toBe(running[0].seq + 1);
    expect(events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text)).toEqual([
      're-driven answer',
    ]);
    await expectExtension(t.url, t.apiKey, sid, events);

    // The next input's command is not lost: its turn is no wake.
    bus.lose = null;
    await c.beta.sessions.events.send(sid, { events: [userMessage('plain')] });
    const after = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 2 ? ev : null;
    }, 20_000);
    expect(wakes(after)).toHaveLength(1);
  }, 30_000);
});

describe('span.wakeup_scheduled: recovery of an orphaned turn', () => {
  const fx = useCrashFixture('agentfleet-wakeup-');
  const baseOf = (env: Record<string, string>) => `http://127.0.0.1:${env.PORT}`;

  it('a turn orphaned by kill -9 and resumed: one wake (reason recovery, orphaned_turn)', async () => {
    const c = await crashPlatform(fx, 'wakeup-orphan');
    const log = sessionEvents(c.call);
    let proc = await c.start();
    try {
      await c.addCard(MODEL);
      const envId = (await c.call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (await c.call('/v1/agents', { name: 'a', model: MODEL })).body.id;
      const sid = (await c.call('/v1/sessions', { agent: agentId, environment_id: envId })).body.id;
      fx.model.script(
        MODEL,
        { steps: [{ delay_ms: 60_000 }, { text: 'lost' }] }, // the process dies during it
        say('recovered answer'),
      );
      const requests = () => fx.model.requests.filter((r) => r.model === MODEL);
      const before = requests().length;
      const sent = await c.call(`/v1/sessions/${sid}/events`, { events: [userMessage('go')] });
      expect(sent.status).toBe(202);
      await waitFor(async () => requests().length > before, 20_000);
      const runRecord = await log.events(sid);
      expect(wakes(runRecord)).toEqual([]);
      await kill9(proc.child);

      proc = await c.start();
      const events = await log.endTurn(sid);
      const w = wakes(events);
      expect(w).toHaveLength(1);
      expect(w[0]).toMatchObject({ reason: 'recovery', detail: 'orphaned_turn' });
      expect(w[0].run_id).toMatch(/^run_/);
      expect(Date.parse(w[0].woken_at)).toBeGreaterThanOrEqual(Date.parse(w[0].scheduled_at));
      // The scan announced the orphan (session.status_rescheduled) before the worker took it;
      // the wake opens the resumed turn's reconciliation, before its session.status_running.
      const running = events.filter((e) => e.type === 'session.status_running');
      expect(running).toHaveLength(2);
      expect(w[0].seq).toBeGreaterThan(running[0].seq);
      expect(w[0].seq).toBeLessThan(running[1].seq);
      const resched = events.find((e) => e.type === 'session.status_rescheduled');
      expect(resched.seq).toBeLessThan(w[0].seq);
      expect(
        events.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text),
      ).toEqual(['recovered answer']);
      await expectExtension(baseOf(c.env), 'op-wakeup-orphan', sid, events);
    } finally {
      await kill9(proc.child);
    }
  }, 60_000);
});
