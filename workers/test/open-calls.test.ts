/**
 * Where a cloud session's log is settled from (workers/src/turn/openCalls.ts): the earliest held
 * call (`ask`) or custom tool call without a result; a custom call abandoned by an idle and then a
 * user.message stops counting, a held one counts until its result; a log that is not an
 * extension of the folded one is folded again from the start.
 */
import { describe, expect, it } from 'vitest';
import { OpenCalls } from '../src/turn/openCalls.js';

let n = 0;
const ev = (type: string, payload: Record<string, unknown> = {}, id = `sevt_${++n}`) =>
  ({ _id: id, type, payload, seq: n, session_id: 's', tenant_id: 't', created_at: '' }) as any;

describe('open calls', () => {
  it('start at the earliest call settleHeld could act on or wait for', () => {
    const open = new OpenCalls();
    const log: any[] = [ev('user.message'), ev('session.status_running')];
    log.push(ev('agent.tool_use', { name: 'bash', evaluated_permission: 'allow' }));
    log.push(ev('agent.tool_result', { tool_use_id: log[2]._id }));
    expect(open.start(log)).toBe(log.length); // nothing open
    // An allowed call without a result (interrupted) is not one settleHeld acts on.
    log.push(ev('agent.tool_use', { name: 'bash', evaluated_permission: 'allow' }));
    expect(open.start(log)).toBe(log.length);
    const custom = ev('agent.custom_tool_use', { name: 'lookup' });
    log.push(custom, ev('session.status_idle'));
    expect(open.start(log)).toBe(log.indexOf(custom));
    // A held call after it: the custom call is still the earliest.
    log.push(ev('user.custom_tool_result', { custom_tool_use_id: custom._id }));
    log.push(ev('session.status_running'));
    const held = ev('agent.tool_use', { name: 'bash', evaluated_permission: 'ask' });
    log.push(held, ev('session.status_idle'));
    expect(open.start(log)).toBe(log.indexOf(held));
    // Confirmed, not yet answered: still open. Its result closes it.
    log.push(ev('user.tool_confirmation', { tool_use_id: held._id, result: 'allow' }));
    expect(open.start(log)).toBe(log.indexOf(held));
    log.push(ev('agent.tool_result', { tool_use_id: held._id }));
    expect(open.start(log)).toBe(log.length);
  });

  it('an abandoned custom call stops counting; an abandoned held call counts until its result', () => {
    const open = new OpenCalls();
    const custom = ev('agent.custom_tool_use', { name: 'lookup' });
    const held = ev('agent.mcp_tool_use', { name: 'q', evaluated_permission: 'ask' });
    const log: any[] = [ev('user.message'), custom, held, ev('session.status_idle')];
    expect(open.start(log)).toBe(1);
    log.push(ev('user.message'));
    expect(open.start(log)).toBe(2);
    log.push(ev('agent.mcp_tool_result', { mcp_tool_use_id: held._id, is_error: true }));
    expect(open.start(log)).toBe(log.length);
    // A custom call made after the idle is not abandoned by the same user.message.
    const later = ev('agent.custom_tool_use', { name: 'lookup' });
    log.push(ev('session.status_idle'), later, ev('user.message'));
    expect(open.start(log)).toBe(log.indexOf(later));
  });

  it('folds only the new events of an extended log; another log starts again', () => {
    const open = new OpenCalls();
    const custom = ev('agent.custom_tool_use', { name: 'lookup' });
    const log: any[] = [ev('user.message'), custom];
    expect(open.start(log)).toBe(1);
    expect(open.start([...log, ev('agent.message')])).toBe(1);
    const other = [ev('user.message'), ev('user.message'), ev('agent.custom_tool_use')];
    expect(open.start(other)).toBe(2);
    expect(open.start([other[0]])).toBe(1);
  });
});
