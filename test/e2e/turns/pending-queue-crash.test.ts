/**
 * The pending-message queue across kill -9 of the all-in-one process (workers/src/turn/pending.ts):
 * messages queued during a turn whose worker dies stay queued (their pending markers were
 * written with them); the recovered turn promotes them where its resumed
 * session.status_running folds them into the conversation; a worker killed after that
 * promotion, mid-call, leaves a recovered turn that promotes nothing again. Nothing is
 * duplicated: one user.message, one pending and one promoted marker each, in send order, and
 * every later model request holds the three messages once, in order. On the real adapters too
 * (realAdapterEnv).
 */
import { describe, expect, it } from 'vitest';
import { kill9 } from '../../kit/process.js';
import { crashPlatform, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-pending-crash-');
const MODEL = 'pending-crash-model';
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });
const userText = (r: any) =>
  r.body.messages
    .filter((m: any) => m.role === 'user')
    .flatMap((m: any) => m.content.map((b: any) => b.text ?? `[${b.type}]`))
    .join('|');
const markers = (events: any[], kind: string) =>
  events.filter((e) => e.type === `system.user_message_${kind}`).map((e) => e.user_message_id);

describe('pending-message queue across a crash', () => {
  it('kill -9 while messages are queued, then after their promotion: each promoted once', async () => {
    const c = await crashPlatform(fx, 'pending-crash');
    const call = c.call;
    const log = sessionEvents(call);
    let proc = await c.start();
    try {
      await c.addCard(MODEL);
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (await call('/v1/agents', { name: 'a', model: MODEL })).body.id;
      const sid = (await call('/v1/sessions', { agent: agentId, environment_id: envId })).body.id;
      fx.model.script(
        MODEL,
        // The turn's model call never finishes: the process dies during it, twice.
        { steps: [{ delay_ms: 60_000 }, { text: 'lost' }] },
        { steps: [{ delay_ms: 60_000 }, { text: 'lost' }] },
        { steps: [{ text: 'r0' }] },
        { steps: [{ text: 'r1' }] },
      );
      const requests = () => fx.model.requests.filter((r) => r.model === MODEL);
      const first = await call(`/v1/sessions/${sid}/events`, { events: [message('m0')] });
      expect(first.status).toBe(202);
      await waitFor(async () => requests().length >= 1, 30_000);
      const ids: string[] = [];
      for (const text of ['m1', 'm2', 'm3']) {
        const sent = await call(`/v1/sessions/${sid}/events`, { events: [message(text)] });
        expect(sent.status, JSON.stringify(sent.body)).toBe(202);
        expect(sent.body.data.map((e: any) => e.type)).toEqual(['user.message']);
        ids.push(sent.body.data[0].id);
      }
      expect(markers(await log.events(sid), 'pending')).toEqual(ids);
      await kill9(proc.child);

      // The recovered turn promotes them, then its model call hangs: killed after the promotion.
      proc = await c.start();
      await waitFor(async () => requests().length >= 2, 60_000);
      const promoted = await waitFor(async () => {
        const ev = await log.events(sid);
        return markers(ev, 'promoted').length >= 3 ? ev : null;
      }, 30_000);
      expect(markers(promoted, 'promoted')).toEqual(ids);
      await kill9(proc.child);

      proc = await c.start();
      await waitFor(async () => {
        const ev = await log.events(sid);
        return (
          ev.some((e) => e.type === 'agent.message') && ev.at(-1)?.type === 'session.status_idle'
        );
      }, 60_000);
      // Let the drain settle, then read the whole log.
      await new Promise((r) => setTimeout(r, 1_500));
      const events = await waitFor(async () => {
        const ev = await log.events(sid);
        return ev.at(-1)?.type === 'session.status_idle' ? ev : null;
      }, 30_000);
      const of = (type: string) => events.filter((e) => e.type === type);
      expect(of('user.message').map((e) => e.id)).toEqual([first.body.data[0].id, ...ids]);
      expect(markers(events, 'pending')).toEqual(ids);
      expect(markers(events, 'promoted')).toEqual(ids);
      expect(markers(events, 'cancelled')).toEqual([]);
      // Promoted after the session.status_running the recovered turn resumed at.
      const running = of('session.status_running');
      const promotedSeqs = of('system.user_message_promoted').map((e) => e.seq);
      expect(Math.min(...promotedSeqs)).toBeGreaterThan(running[1].seq);
      expect(of('agent.message').map((e) => e.content[0].text)).toContain('r0');
      for (const r of requests().slice(1)) {
        const text = userText(r);
        expect(text.match(/m1\|m2\|m3/g), text).toHaveLength(1);
        expect(text.match(/m1/g), text).toHaveLength(1);
      }
    } finally {
      await kill9(proc.child);
    }
  }, 180_000);
});
