/**
 * Semantics every CommandBus adapter must pass (embedded and Kafka).
 *
 * `make` opens a new bus (for a networked adapter: a new client, as another process would);
 * it may be called more than once per test, and everything it opened is closed after the test.
 * Every test uses its own consumer groups and session ids, so the suite can run against a
 * shared broker whose topics hold other tests' commands: handlers ignore commands of sessions
 * that are not the test's own.
 *
 * Differences between adapters are declared, not skipped:
 * - `durable: true` (Kafka): a command published while its group has no running consumer, or left
 *   unacknowledged by a consumer that crashed (or stopped while it was in flight), reaches the
 *   group's next consumer. Requires `crash`, which makes a consumer go away as a crash would
 *   (no further commit, in-flight handlers abandoned).
 * - `durable: false` (embedded): queues live in the process. At-least-once holds within the
 *   process (a handler that throws gets the same command again, see the retry tests); a command
 *   published while its group has no consumer is not kept, and a crash loses the queue. The
 *   embedded platform relies on the store's recovery sweep instead (sessions with unprocessed
 *   input are re-driven at start). One test asserts that limitation, so it is not forgotten if
 *   the adapter changes.
 * - `onShutdownStep`, when given, reports the steps of ConsumerHandle.stop() and the order
 *   pause → drain → commit → disconnect is asserted; without it only the observable effects of
 *   that order are (nothing new starts after stop(), stop() resolves after the in-flight handler).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS, type CommandEnvelope, type CommandName } from '@agentfleet/schemas';
import type { CommandBus, CommandHandlers, ConsumerHandle } from '../src/bus/port.js';

export interface BusUnderTest {
  bus: CommandBus;
  /** The dead letters recorded for these command ids (waiting for them as long as needed). */
  deadLetters(ids: string[]): Promise<Array<{ envelope: CommandEnvelope | null; error: string }>>;
  /** Subscribes to the steps of ConsumerHandle.stop(), when the adapter reports them. */
  onShutdownStep?: (listener: (group: string, step: string) => void) => void;
  close(): Promise<void>;
}

export interface BusContractOptions {
  durable: boolean;
  crash?: (handle: ConsumerHandle) => Promise<void>;
  /** How long a delivery may take (Kafka: group joins and rebalances take seconds). */
  deliveryTimeoutMs?: number;
  /** Per-test timeout. */
  testTimeoutMs?: number;
}

type Turn = CommandEnvelope<'session.turn.requested'>;

let counter = 0;
const unique = (base: string) => `${base}_${Date.now().toString(36)}_${process.pid}_${counter++}`;

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};

export function busContract(
  name: string,
  make: () => Promise<BusUnderTest>,
  caps: BusContractOptions,
): void {
  const delivery = caps.deliveryTimeoutMs ?? 5_000;
  const testTimeout = caps.testTimeoutMs ?? 30_000;

  describe(`CommandBus contract: ${name}`, () => {
    const opened: BusUnderTest[] = [];
    const handles: ConsumerHandle[] = [];
    const open = async () => {
      const h = await make();
      opened.push(h);
      return h;
    };
    const consume = async (bus: CommandBus, group: string, handlers: CommandHandlers) => {
      const handle = await bus.consume(group, handlers);
      handles.push(handle);
      return handle;
    };
    afterEach(async () => {
      await Promise.allSettled(handles.splice(0).map((h) => h.stop()));
      await Promise.allSettled(opened.splice(0).map((h) => h.close()));
    });

    /** Session ids of one test; `mine` tells a test's own commands from others' on a shared topic. */
    const sessions = (n: number) => {
      const tag = unique('sess');
      const ids = Array.from({ length: n }, (_, i) => `${tag}_${i}`);
      return {
        ids,
        mine: (cmd: CommandEnvelope) =>
          (cmd.payload as { session_id: string }).session_id.startsWith(`${tag}_`),
      };
    };
    const turn = (session_id: string, seq: number) => ({
      tenant_id: 'ten_contract',
      session_id,
      seq,
    });

    it(
      'delivers every published command, with its envelope, to each group that handles it',
      async () => {
        const { bus } = await open();
        const s = sessions(4);
        const g1 = unique('g_all'),
          g2 = unique('g_turns');
        const seen1: CommandEnvelope[] = [],
          seen2: CommandEnvelope[] = [];
        await consume(bus, g1, {
          'session.turn.requested': async (c) => void (s.mine(c) && seen1.push(c)),
          'session.cancel.requested': async (c) => void (s.mine(c) && seen1.push(c)),
        });
        await consume(bus, g2, {
          'session.turn.requested': async (c) => void (s.mine(c) && seen2.push(c)),
        });

        const before = bus.stats().published;
        const published: Array<{ id: string; name: CommandName; payload: unknown }> = [];
        for (let i = 0; i < 20; i++) {
          const payload = turn(s.ids[i % 4]!, i);
          const id = await bus.publish(
            'session.turn.requested',
            payload,
            i === 7 ? { id: 'cmd_explicit_' + s.ids[0] } : undefined,
          );
          published.push({ id, name: 'session.turn.requested', payload });
        }
        expect(published[7]!.id).toBe('cmd_explicit_' + s.ids[0]);
        const cancel = { tenant_id: 'ten_contract', session_id: s.ids[1]!, reason: 'user' };
        published.push({
          id: await bus.publish('session.cancel.requested', cancel),
          name: 'session.cancel.requested',
          payload: cancel,
        });
        expect(new Set(published.map((p) => p.id)).size).toBe(21);
        expect(bus.stats().published - before).toBe(21);

        await waitFor(
          () => seen1.length >= 21 && seen2.length >= 20,
          delivery,
          'both groups to receive their commands',
        );
        const byId = new Map(seen1.map((c) => [c.id, c]));
        for (const p of published) {
          const got = byId.get(p.id);
          expect(got, p.id).toBeDefined();
          expect(got).toMatchObject({
            v: 1,
            id: p.id,
            name: p.name,
            payload: p.payload,
            attempt: 1,
          });
          expect(Number.isNaN(Date.parse(got!.published_at))).toBe(false);
        }
        expect(seen1.map((c) => c.id).sort()).toEqual(published.map((p) => p.id).sort());
        // A group receives only the commands it has handlers for.
        expect(seen2.map((c) => c.id).sort()).toEqual(
          published
            .filter((p) => p.name === 'session.turn.requested')
            .map((p) => p.id)
            .sort(),
        );
      },
      testTimeout,
    );

    it(
      'keeps order per key: 3 keys x 50 commands published interleaved, without waiting for each',
      async () => {
        const { bus } = await open();
        const s = sessions(3);
        const got = new Map<string, number[]>(s.ids.map((id) => [id, []]));
        let running = 0,
          maxRunning = 0;
        await consume(bus, unique('g_order'), {
          'session.turn.requested': async (c) => {
            if (!s.mine(c)) return;
            running++;
            maxRunning = Math.max(maxRunning, running);
            await new Promise((r) => setTimeout(r, Math.random() * 3));
            got.get(c.payload.session_id)!.push(c.payload.seq);
            running--;
          },
        });
        const sends: Promise<string>[] = [];
        for (let seq = 0; seq < 50; seq++)
          for (const id of s.ids) sends.push(bus.publish('session.turn.requested', turn(id, seq)));
        await Promise.all(sends);
        await waitFor(
          () => [...got.values()].every((l) => l.length >= 50),
          delivery * 3,
          '150 commands',
        );
        const expected = Array.from({ length: 50 }, (_, i) => i);
        for (const id of s.ids) expect(got.get(id), id).toEqual(expected);
      },
      testTimeout,
    );

    it(
      'retries a failing handler with backoff, then acknowledges it once it succeeds',
      async () => {
        const { bus } = await open();
        const s = sessions(1);
        const calls: Array<{ id: string; attempt: number; at: number }> = [];
        const before = bus.stats();
        await consume(bus, unique('g_retry'), {
          'session.turn.requested': async (c) => {
            if (!s.mine(c)) return;
            calls.push({ id: c.id, attempt: c.attempt, at: Date.now() });
            if (calls.length < 3) throw new Error(`transient ${calls.length}`);
          },
        });
        const id = await bus.publish('session.turn.requested', turn(s.ids[0]!, 0));
        await waitFor(() => calls.length >= 3, delivery + 2_000, 'the third attempt');
        await new Promise((r) => setTimeout(r, 300));
        expect(calls.map((c) => [c.id, c.attempt])).toEqual([
          [id, 1],
          [id, 2],
          [id, 3],
        ]);
        const base = COMMANDS['session.turn.requested'].retry.baseDelayMs;
        // Full-jitter backoff waits at least half of base * 2^(attempt-1).
        expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(base / 2 - 20);
        expect(calls[2]!.at - calls[1]!.at).toBeGreaterThanOrEqual(base - 20);
        const after = bus.stats();
        expect(after.retried - before.retried).toBe(2);
        expect(after.handled - before.handled).toBeGreaterThanOrEqual(1);
        expect(after.deadLettered - before.deadLettered).toBe(0);
      },
      testTimeout,
    );

    it(
      'dead-letters a command that keeps failing after maxAttempts, counts it once, and moves on to the next',
      async () => {
        const h = await open();
        const { bus } = h;
        const s = sessions(1);
        const { maxAttempts } = COMMANDS['session.turn.requested'].retry;
        const attempts: number[] = [];
        const after: string[] = [];
        const before = bus.stats();
        // The id is chosen up front: an adapter may run the handler before publish() resolves.
        const poison = unique('cmd_poison');
        await consume(bus, unique('g_dlq'), {
          'session.turn.requested': async (c) => {
            if (!s.mine(c)) return;
            if (c.id === poison) {
              attempts.push(c.attempt);
              throw new Error(`boom ${c.id}`);
            }
            after.push(c.id);
          },
        });
        expect(
          await bus.publish('session.turn.requested', turn(s.ids[0]!, 0), { id: poison }),
        ).toBe(poison);
        const next = await bus.publish('session.turn.requested', turn(s.ids[0]!, 1));
        // Backoff 200..1600 ms over the attempts: a few seconds.
        await waitFor(
          () => after.includes(next),
          delivery + 8_000,
          'the command behind the dead-lettered one',
        );
        await new Promise((r) => setTimeout(r, 500));
        expect(attempts).toEqual(Array.from({ length: maxAttempts }, (_, i) => i + 1));
        expect(bus.stats().deadLettered - before.deadLettered).toBe(1);
        expect(bus.stats().retried - before.retried).toBe(maxAttempts - 1);
        const letters = await h.deadLetters([poison]);
        expect(letters).toHaveLength(1);
        expect(letters[0]!.envelope).toMatchObject({
          id: poison,
          name: 'session.turn.requested',
          payload: turn(s.ids[0]!, 0),
          attempt: maxAttempts,
        });
        expect(letters[0]!.error).toContain(`boom ${poison}`);
        expect(after).toEqual([next]);
      },
      testTimeout,
    );

    it(
      'stop(): stops taking commands, finishes the in-flight handler, acknowledges it, then disconnects',
      async () => {
        const h = await open();
        const { bus } = h;
        const s = sessions(1);
        const group = unique('g_stop');
        const events: string[] = [];
        h.onShutdownStep?.((g, step) => g === group && events.push(`step:${step}`));
        const release = gate();
        const started: string[] = [];
        const a = await consume(bus, group, {
          'session.turn.requested': async (c) => {
            if (!s.mine(c)) return;
            started.push(c.id);
            events.push(`start:${c.payload.seq}`);
            await release.opened;
            events.push(`end:${c.payload.seq}`);
          },
        });
        const x = await bus.publish('session.turn.requested', turn(s.ids[0]!, 0));
        await waitFor(() => started.includes(x), delivery, 'the handler to start');

        let stopped = false;
        const stopping = a.stop().then(() => {
          events.push('stopped');
          stopped = true;
        });
        await new Promise((r) => setTimeout(r, 300));
        expect(stopped, 'stop() waits for the in-flight handler').toBe(false);
        // Published while the consumer is stopping: this consumer must not take it.
        const y = await bus.publish('session.turn.requested', turn(s.ids[0]!, 1));
        await new Promise((r) => setTimeout(r, 300));
        release.open();
        await stopping;
        expect(started).toEqual([x]);
        expect(events.filter((e) => !e.startsWith('step:'))).toEqual([
          'start:0',
          'end:0',
          'stopped',
        ]);
        if (h.onShutdownStep) {
          expect(events).toEqual([
            'start:0',
            'step:pause',
            'step:drain',
            'end:0',
            'step:commit',
            'step:disconnect',
            'stopped',
          ]);
        }

        // The group's next consumer: the acknowledged command is not delivered again; a durable
        // bus also hands it the command published while the first consumer was stopping.
        const seen: CommandEnvelope[] = [];
        await consume(bus, group, {
          'session.turn.requested': async (c) => void (s.mine(c) && seen.push(c)),
        });
        const z = await bus.publish('session.turn.requested', turn(s.ids[0]!, 2));
        await waitFor(
          () => seen.some((c) => c.id === z),
          delivery,
          'the next consumer to receive a new command',
        );
        expect(seen.map((c) => c.id)).toEqual(caps.durable ? [y, z] : [z]);
      },
      testTimeout,
    );

    if (caps.durable) {
      it(
        "at-least-once: a command whose consumer crashed mid-handler is redelivered to the group's next consumer",
        async () => {
          if (!caps.crash) throw new Error('a durable adapter must provide crash()');
          const first = await open();
          const s = sessions(1);
          const group = unique('g_crash');
          const startedA: Turn[] = [];
          const a = await consume(first.bus, group, {
            'session.turn.requested': async (c) => {
              if (!s.mine(c)) return;
              startedA.push(c);
              await new Promise(() => {}); // never finishes: the consumer dies first
            },
          });
          const x = await first.bus.publish('session.turn.requested', turn(s.ids[0]!, 0));
          await waitFor(
            () => startedA.length === 1,
            delivery,
            'the first consumer to start the handler',
          );
          await caps.crash(a);
          // Published while the group has no consumer at all.
          const w = await first.bus.publish('session.turn.requested', turn(s.ids[0]!, 1));

          const second = await open();
          const seen: Turn[] = [];
          await consume(second.bus, group, {
            'session.turn.requested': async (c) => void (s.mine(c) && seen.push(c)),
          });
          await waitFor(
            () => seen.some((c) => c.id === w),
            delivery * 2,
            'redelivery to the next consumer',
          );
          expect(seen.map((c) => c.id)).toEqual([x, w]);
          expect(seen[0]).toMatchObject({ id: x, payload: turn(s.ids[0]!, 0), attempt: 1 });
          expect(startedA.map((c) => c.id)).toEqual([x]);
        },
        testTimeout,
      );
    } else {
      it(
        'is not durable (declared): a command published while its group has no consumer is not kept',
        async () => {
          const { bus } = await open();
          const s = sessions(1);
          const group = unique('g_nodur');
          const a = await consume(bus, group, { 'session.turn.requested': async () => {} });
          await a.stop();
          await bus.publish('session.turn.requested', turn(s.ids[0]!, 0));
          const seen: CommandEnvelope[] = [];
          await consume(bus, group, {
            'session.turn.requested': async (c) => void (s.mine(c) && seen.push(c)),
          });
          const z = await bus.publish('session.turn.requested', turn(s.ids[0]!, 1));
          await waitFor(() => seen.length > 0, delivery, 'the new command');
          await new Promise((r) => setTimeout(r, 100));
          expect(seen.map((c) => c.id)).toEqual([z]);
        },
        testTimeout,
      );
    }
  });
}
