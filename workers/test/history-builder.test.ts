/**
 * workers/src/turn/history.ts HistoryBuilder: the model history folded incrementally across calls
 * equals a build from scratch for every prefix of a log (random logs of every event type the
 * fold reads), a log that does not extend the previous one is folded from the start, and a
 * builder kept across turns hands out frozen blocks. The turn path uses it through
 * SessionLogCache.history (test/e2e/turns/turn-log-cache.test.ts covers the conversation sent).
 */
import { deepFreeze, type EventDoc } from '@agentfleet/core';
import { buildHistory, HistoryBuilder } from '../src/turn/history.js';
import { SessionLogCache } from '../src/turn/sessionLogCache.js';
import { describe, expect, it } from 'vitest';

let seq = 0;
const ev = (type: string, payload: Record<string, unknown>): EventDoc =>
  deepFreeze({
    _id: `sevt_${++seq}`,
    tenant_id: 't',
    session_id: 's',
    seq,
    type,
    payload,
    created_at: '2026-11-24T00:00:00.000Z',
  }) as EventDoc;

function randomLog(n: number, rand: () => number): EventDoc[] {
  const out: EventDoc[] = [];
  const calls: string[] = [];
  const text = (t: string) => [{ type: 'text', text: t }];
  for (let i = 0; i < n; i++) {
    const r = Math.floor(rand() * 12);
    if (r === 0) out.push(ev('user.message', { content: text(`u${i}`) }));
    else if (r === 1) out.push(ev('session.status_running', {}));
    else if (r === 2) out.push(ev('agent.message', { content: text(`a${i}`) }));
    else if (r === 3) {
      const e = ev('agent.tool_use', { name: 'bash', input: { command: `ls ${i}` } });
      calls.push(e._id);
      out.push(e);
    } else if (r === 4 && calls.length)
      out.push(ev('agent.tool_result', { tool_use_id: calls.shift(), content: text(`r${i}`) }));
    else if (r === 5) out.push(ev('system.message', { content: text(`s${i}`) }));
    else if (r === 6) out.push(ev('agent.thinking', { thinking: `t${i}`, signature: `sig${i}` }));
    else if (r === 7) {
      const e = ev('agent.custom_tool_use', { name: 'lookup', input: {} });
      calls.push(e._id);
      out.push(e);
    } else if (r === 8 && calls.length)
      out.push(
        ev('user.custom_tool_result', { custom_tool_use_id: calls.shift(), content: text('c') }),
      );
    else if (r === 9) out.push(ev('session.status_idle', { stop_reason: { type: 'end_turn' } }));
    else if (r === 10 && calls.length)
      out.push(
        ev('user.tool_result', {
          tool_use_id: calls.shift(),
          content: [{ type: 'search_result', title: 'T', source: 'S', content: text('x') }],
        }),
      );
    else out.push(ev('agent.mcp_tool_use', { name: 'mcp__srv__q', input: { q: i } }));
  }
  return out;
}

function seeded(seed: number) {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('HistoryBuilder', () => {
  it('folding only new events gives what a build from scratch gives, for every prefix', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const log = randomLog(120, seeded(seed));
      const kept = new HistoryBuilder(true);
      for (let k = 0; k <= log.length; k += 1 + (seed % 3)) {
        const prefix = log.slice(0, k);
        expect(kept.build(prefix)).toEqual(buildHistory(prefix));
      }
      expect(kept.build(log)).toEqual(buildHistory(log));
    }
  });

  it('a log that does not extend the previous one is folded from the start', () => {
    const a = randomLog(60, seeded(7));
    const b = randomLog(60, seeded(8));
    const kept = new HistoryBuilder(true);
    kept.build(a);
    expect(kept.build(b)).toEqual(buildHistory(b));
    expect(kept.build(b.slice(0, 30))).toEqual(buildHistory(b.slice(0, 30)));
    const edited = [...b.slice(0, 29), ev('user.message', { content: [] }), ...b.slice(30)];
    expect(kept.build(edited)).toEqual(buildHistory(edited));
  });

  it('a kept builder hands out a fresh array of frozen messages, copied once each', () => {
    const log = [
      ev('user.message', { content: [{ type: 'text', text: 'hi' }] }),
      ev('session.status_running', {}),
      ev('agent.tool_use', { name: 'bash', input: {} }),
    ];
    const kept = new HistoryBuilder(true);
    const first = kept.build(log);
    expect(() => {
      first[0]!.content = [];
    }).toThrow(TypeError);
    expect(() => {
      (first[0] as { role: string }).role = 'assistant';
    }).toThrow(TypeError);
    first.pop();
    expect(kept.build(log)).toEqual(buildHistory(log));
    const tool = kept.build(log)[1]!.content[0] as { id: string };
    expect(() => {
      tool.id = 'changed';
    }).toThrow(TypeError);
    // An unchanged message is the same object on the next call; one that grew is a new copy.
    const grown = [...log, ev('agent.message', { content: [{ type: 'text', text: 'ok' }] })];
    const second = kept.build(grown);
    expect(second[0]).toBe(first[0]);
    const third = kept.build(grown);
    expect(third[0]).toBe(second[0]);
    expect(third[1]).toBe(second[1]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[1]!.content).toHaveLength(2);
    expect(second).toEqual(buildHistory(grown));
  });

  it('an unanswered call gets its error result on every call, also from the reused rewrite', () => {
    const call = ev('agent.custom_tool_use', { name: 'lookup', input: {} });
    const log = [
      ev('user.message', { content: [{ type: 'text', text: 'hi' }] }),
      ev('session.status_running', {}),
      call,
      ev('session.status_idle', { stop_reason: { type: 'requires_action' } }),
      ev('user.message', { content: [{ type: 'text', text: 'never mind' }] }),
      ev('session.status_running', {}),
    ];
    const kept = new HistoryBuilder(true);
    const want = [
      { type: 'tool_result', tool_use_id: call._id, is_error: true },
      { type: 'text', text: 'never mind' },
    ];
    for (let i = 0; i < 3; i++) {
      const h = kept.build(log);
      expect(h).toHaveLength(3);
      expect(h[2]!.content).toMatchObject(want);
      expect(Object.isFrozen(h[2])).toBe(true);
    }
    expect(kept.build(log)).toEqual(buildHistory(log));
  });

  it('SessionLogCache.history folds the cached log incrementally and builds uncached logs whole', async () => {
    const log = randomLog(80, seeded(3));
    let upTo = 40;
    const cache = new SessionLogCache({
      range: async (_t, _s, after, limit) =>
        log.filter((e) => e.seq > after && e.seq <= upTo).slice(0, limit),
    });
    const first = await cache.all('t', 's');
    expect(cache.history('t', 's', first)).toEqual(buildHistory(first));
    upTo = 80;
    const second = await cache.all('t', 's');
    expect(cache.history('t', 's', second)).toEqual(buildHistory(second));
    cache.forget('t', 's');
    expect(cache.history('t', 's', second)).toEqual(buildHistory(second));
  });
});
