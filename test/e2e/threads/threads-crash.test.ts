/**
 * A coordinator session across kill -9 of the all-in-one process while two threads run
 * (core/src/threads, workers/src/turn/threads.ts): each thread's model call is in flight when the
 * process dies. After the restart each thread is resumed once (one session.status_rescheduled in
 * its own log and one session.thread_status_rescheduled on the primary stream, its model asked
 * once more), replies once, and the coordinator's turn, orphaned
 * while it waited, resumes, gets each reply once and ends with one session.status_idle. Nothing
 * is duplicated in any log: one thread per start_thread call, one reply per thread, every event
 * id once, seqs gap-free. On the real adapters too (realAdapterEnv).
 */
import { describe, expect, it } from 'vitest';
import { kill9 } from '../../kit/process.js';
import { crashPlatform, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';
import { say, sentText } from '../../kit/turnHelpers.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';

const fx = useCrashFixture('agentfleet-threads-crash-');
const COORD = 'threads-crash-coordinator';
const WA = 'threads-crash-a';
const WB = 'threads-crash-b';
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });
const lost: ScriptedResponse = { steps: [{ delay_ms: 60_000 }, { text: 'lost' }] };

describe('threads across a crash', () => {
  it('kill -9 while two threads run: each resumes once, the coordinator completes, nothing duplicated', async () => {
    const c = await crashPlatform(fx, 'threads-crash');
    const call = c.call;
    const log = sessionEvents(call);
    let proc = await c.start();
    try {
      for (const m of [COORD, WA, WB]) await c.addCard(m);
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const a = (await call('/v1/agents', { name: 'a', model: WA })).body.id;
      const b = (await call('/v1/agents', { name: 'b', model: WB })).body.id;
      const coord = await call('/v1/agents', {
        name: 'lead',
        model: COORD,
        multiagent: { type: 'coordinator', agents: [a, b] },
      });
      expect(coord.status, JSON.stringify(coord.body)).toBe(200);
      const sid = (await call('/v1/sessions', { agent: coord.body.id, environment_id: envId })).body
        .id;
      fx.model.script(
        COORD,
        {
          steps: [
            { tool_use: { name: 'start_thread', input: { agent_name: 'a', task: 'task a' } } },
            { tool_use: { name: 'start_thread', input: { agent_name: 'b', task: 'task b' } } },
          ],
          stop_reason: 'tool_use',
        },
        ...Array.from({ length: 4 }, () => ({
          steps: [],
          decide: (body: any) =>
            sentText(body).includes('A done') && sentText(body).includes('B done')
              ? say('both threads are done')
              : say('waiting'),
        })),
      );
      fx.model.script(WA, lost, say('A done'));
      fx.model.script(WB, lost, say('B done'));
      const requests = (m: string) => fx.model.requests.filter((r) => r.model === m);
      await call(`/v1/sessions/${sid}/events`, { events: [message('go')] });
      // Both threads' first model calls are in flight (they never finish) when the process dies.
      await waitFor(async () => requests(WA).length === 1 && requests(WB).length === 1, 30_000);
      await kill9(proc.child);

      proc = await c.start();
      const primary = await log.endTurn(sid);
      await new Promise((r) => setTimeout(r, 1_000)); // nothing more arrives
      const events = await log.events(sid);
      expect(events.map((e) => e.id)).toEqual(primary.map((e) => e.id));
      const of = (ev: any[], type: string) => ev.filter((e) => e.type === type);
      expect(of(events, 'session.status_idle')).toHaveLength(1);
      expect(events.at(-2)).toMatchObject({
        type: 'span.model_request_end',
      });
      expect(of(events, 'agent.message').at(-1).content[0].text).toBe('both threads are done');
      const created = of(events, 'session.thread_created');
      expect(created.map((e) => e.agent_name)).toEqual(['a', 'b']);
      const received = of(events, 'agent.thread_message_received');
      expect(received.map((e) => [e.from_agent_name, e.content[0].text]).sort()).toEqual([
        ['a', 'A done'],
        ['b', 'B done'],
      ]);
      expect(of(events, 'session.thread_status_idle')).toHaveLength(2);
      // The coordinator's turn was orphaned while it waited, and resumed once.
      expect(of(events, 'session.status_rescheduled')).toHaveLength(1);
      // Each thread's resume is cross-posted to the primary stream, once.
      const resched = of(events, 'session.thread_status_rescheduled');
      expect(resched.map((e) => e.agent_name).sort()).toEqual(['a', 'b']);
      expect(new Set(resched.map((e) => e.session_thread_id))).toEqual(
        new Set(created.map((e) => e.session_thread_id)),
      );
      const threads = (await call(`/v1/sessions/${sid}/threads`)).body.data as any[];
      expect(threads).toHaveLength(3);
      for (const th of threads.slice(1)) {
        expect(th.status).toBe('idle');
        const own = (await call(`/v1/sessions/${sid}/threads/${th.id}/events?limit=1000`)).body
          .data as any[];
        expect(own.map((e) => e.seq)).toEqual(own.map((_, i) => i + 1));
        expect(new Set(own.map((e) => e.id)).size).toBe(own.length);
        expect(of(own, 'session.status_rescheduled')).toHaveLength(1);
        expect(of(own, 'session.status_idle')).toHaveLength(1);
        expect(of(own, 'agent.thread_message_received')).toHaveLength(1);
        const replies = of(own, 'agent.thread_message_sent');
        expect(replies).toHaveLength(1);
        expect(replies[0].content[0].text).toBe(th.agent.name === 'a' ? 'A done' : 'B done');
      }
      // Each thread's model was asked once more after the crash, and once only.
      expect(requests(WA)).toHaveLength(2);
      expect(requests(WB)).toHaveLength(2);
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    } finally {
      await kill9(proc.child);
    }
  }, 180_000);
});
