/**
 * workers/src/turn/control.ts on the embedded pub/sub (the Redis one shares the port contract,
 * core/test/coordination.contract.ts): a drain subscribes once, so an interrupt that lands
 * while no turn is registered (after the drain read the session, before its turn started) must
 * still abort the turn it was meant for. Through the public interface the same paths are
 * covered by test/e2e/sessions/sessions-events.test.ts (interrupt and cancel mid-turn).
 */
import { controlChannel } from '@agentfleet/core';
import { embeddedCoordination } from '@agentfleet/core/adapters';
import { TurnControl } from '../src/turn/control.js';
import { TurnAborted } from '../src/turn/events.js';
import { describe, expect, it } from 'vitest';

const reasonOf = (a: AbortController) => (a.signal.reason as { reason?: string })?.reason;

describe('TurnControl', () => {
  it('an interrupt seen between turns aborts the next turn only if it is newer than its input', async () => {
    const { pubsub } = embeddedCoordination();
    const control = await TurnControl.open(pubsub, 'sesn_a');
    await pubsub.publish(controlChannel('sesn_a'), { type: 'interrupt', seq: 7, reason: 'x' });
    const older = new AbortController();
    control.register(older, 5);
    expect(reasonOf(older)).toBe('interrupt');
    control.unregister(older);
    const newer = new AbortController();
    control.register(newer, 7);
    expect(newer.signal.aborted).toBe(false);
    await pubsub.publish(controlChannel('sesn_a'), { type: 'interrupt', seq: 7, reason: 'x' });
    expect(newer.signal.aborted).toBe(false);
    await pubsub.publish(controlChannel('sesn_a'), { type: 'interrupt', seq: 9, reason: 'x' });
    expect(reasonOf(newer)).toBe('interrupt');
    await control.close();
  });

  it('a terminate aborts the running turn and every turn registered after it; other sessions are untouched', async () => {
    const { pubsub } = embeddedCoordination();
    const a = await TurnControl.open(pubsub, 'sesn_a');
    const b = await TurnControl.open(pubsub, 'sesn_b');
    const running = new AbortController();
    const other = new AbortController();
    a.register(running, 0);
    b.register(other, 0);
    await pubsub.publish(controlChannel('sesn_a'), {
      type: 'interrupt',
      seq: 0,
      reason: 'terminated',
    });
    expect(reasonOf(running)).toBe('terminated');
    expect(other.signal.aborted).toBe(false);
    a.unregister(running);
    const later = new AbortController();
    a.register(later, 100);
    expect(reasonOf(later)).toBe('terminated');
    await a.close();
    await b.close();
  });

  it('abortTurn (a lost lease) aborts the registered turn only, not one registered later', async () => {
    const { pubsub } = embeddedCoordination();
    const control = await TurnControl.open(pubsub, 'sesn_d');
    control.abortTurn(new TurnAborted('lease_lost')); // no turn registered: nothing to abort
    const turn = new AbortController();
    control.register(turn, 0);
    control.abortTurn(new TurnAborted('lease_lost'));
    expect(reasonOf(turn)).toBe('lease_lost');
    control.unregister(turn);
    const next = new AbortController();
    control.register(next, 0);
    expect(next.signal.aborted).toBe(false);
    await control.close();
  });

  it('after close, signals reach nothing', async () => {
    const { pubsub } = embeddedCoordination();
    const control = await TurnControl.open(pubsub, 'sesn_c');
    const turn = new AbortController();
    control.register(turn, 0);
    await control.close();
    await pubsub.publish(controlChannel('sesn_c'), { type: 'interrupt', seq: 3, reason: 'x' });
    expect(turn.signal.aborted).toBe(false);
  });
});
