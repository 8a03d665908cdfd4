/**
 * Where a cloud session's log can be settled from (../tools/permissions.ts `settleHeld`): the
 * index of the earliest tool call settleHeld could still act on or wait for, folded
 * incrementally beside the log cache's entry (./sessionLogCache.ts), so a turn does not scan the
 * whole log for calls that were settled long ago.
 *
 * settleHeld acts on, or waits for, a held call (`evaluated_permission: ask`) or a custom tool
 * call that has no result yet. Everything it reads about a call (its result, its confirmation,
 * the idle and the user.message that abandon it) comes after the call in the log, so settling
 * `log.slice(start)` settles what `log` would. A held call counts until its result (settleHeld
 * appends one when the call is denied, allowed or abandoned). A custom tool call without a result
 * stops counting once abandoned (an idle, then a user.message, after it): settleHeld leaves such
 * a call alone (history.ts answers it). Sessions on a self_hosted environment (calls the worker
 * runs, results limited to the turn's input) are settled over the whole log.
 * Proven by workers/test/open-calls.test.ts and the permission and custom tool tests.
 */
import { aboutAThread, type EventDoc } from '@agentfleet/core';

export class OpenCalls {
  /** Open call id → its index in the log; Map order is log order, so the first is the earliest. */
  private open = new Map<string, number>();
  private customs = new Set<string>();
  /** Open custom calls with an idle after them: the next user.message abandons them. */
  private idleAfter = new Set<string>();
  private seen = 0;
  private last: EventDoc | undefined;

  /** The index to settle `events` from (its length when no call is open). */
  start(events: readonly EventDoc[]): number {
    if (events.length < this.seen || (this.seen && events[this.seen - 1] !== this.last))
      this.reset();
    for (let i = this.seen; i < events.length; i++) this.fold(events[i]!, i);
    this.seen = events.length;
    this.last = events[events.length - 1];
    for (const index of this.open.values()) return index;
    return events.length;
  }

  private reset(): void {
    this.open.clear();
    this.customs.clear();
    this.idleAfter.clear();
    this.seen = 0;
    this.last = undefined;
  }

  private fold(e: EventDoc, index: number): void {
    if (aboutAThread(e)) return; // a child thread's call or answer: the thread settles it
    const p = e.payload as Record<string, unknown>;
    switch (e.type) {
      case 'agent.tool_use':
      case 'agent.mcp_tool_use':
        if (p.evaluated_permission === 'ask') this.open.set(e._id, index);
        break;
      case 'agent.custom_tool_use':
        this.open.set(e._id, index);
        this.customs.add(e._id);
        break;
      case 'agent.tool_result':
      case 'user.tool_result':
        this.close(String(p.tool_use_id));
        break;
      case 'agent.mcp_tool_result':
        this.close(String(p.mcp_tool_use_id));
        break;
      case 'user.custom_tool_result':
        this.close(String(p.custom_tool_use_id));
        break;
      case 'session.status_idle':
        for (const id of this.customs) this.idleAfter.add(id);
        break;
      case 'user.message':
        for (const id of this.idleAfter) this.close(id);
        break;
    }
  }

  private close(id: string): void {
    this.open.delete(id);
    this.customs.delete(id);
    this.idleAfter.delete(id);
  }
}
