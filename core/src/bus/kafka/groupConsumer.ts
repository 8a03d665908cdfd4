/**
 * One consumer group's member in this process (kafkajs, `autoCommit: false`). Guarantees:
 * - kafkajs hands each partition's messages to eachMessage one at a time, in offset order
 *   (partitions run concurrently); a message's offset is committed only after it was handled
 *   to 'ack' (commandProcessor.ts: handler resolved, or dead-lettered); a commit that fails
 *   stays pending for the next commit; offsets pending for a partition this member lost at a
 *   rebalance are dropped (the new owner commits them);
 * - commits run in the background, one at a time, carrying every partition's latest handled
 *   offset: handling never waits for a commit. kafkajs retries a commit for tens of seconds
 *   around a rebalance or a broker restart, and a partition's next message would otherwise wait
 *   behind it (kafkajs#1732); on Kafka a turn command no longer waits a commit round trip;
 * - while a handler runs the member keeps heartbeating, so a long handler does not cost the
 *   group its partitions;
 * - a consumer that kafkajs will not restart itself (a non-retriable crash) is replaced after
 *   2 s;
 * - stop() is graceful, in the order pause → drain → commit → disconnect (each step reported
 *   to onShutdownStep): nothing new is taken, in-flight handlers finish, their offsets are
 *   committed (three tries), then it disconnects; abort() is what a crash looks like: in-flight
 *   handlers are abandoned and nothing more is committed (the group's next consumer gets those
 *   commands).
 * Proved by core/test/bus.contract.ts ("stop(): stops taking commands, finishes the in-flight
 * handler, acknowledges it, then disconnects"; "at-least-once: a command whose consumer crashed
 * mid-handler is redelivered to the group's next consumer") run against Kafka by
 * core/test/bus.test.ts, and its own "a consumer process SIGKILLed mid-handler: …" and "a broker
 * restart: …" tests.
 */
import type { BusStats, CommandHandlers } from '../port.js';
import type { Consumer, EachMessagePayload, Kafka, Producer } from 'kafkajs';
import type { Logger } from '../../log.js';
import { sleep } from '../../util.js';
import { processMessage, type CommandProcessorContext } from './commandProcessor.js';
import { groupTimeouts, type KafkaBusOptions, type ShutdownStep } from './options.js';
import { namespacedGroup } from './topics.js';

/** What a group member needs from its bus (bus.ts KafkaCommandBus). */
export interface ConsumerHost {
  readonly kafka: Kafka;
  readonly opts: KafkaBusOptions;
  readonly log: Logger;
  readonly producer: Producer;
  readonly counters: BusStats;
}

export class GroupConsumer {
  private consumer: Consumer | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /** Offsets (next to read) of handled messages not yet committed, by `topic:partition`. */
  private readonly pending = new Map<
    string,
    { topic: string; partition: number; offset: string }
  >();
  private readonly stopCtl = new AbortController();
  private readonly abortCtl = new AbortController();
  private readonly aborted: Promise<'aborted'>;
  stopping = false;
  private stopped: Promise<void> | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  /** The background commit in flight, and whether offsets were handled since it started. */
  private committing: Promise<void> | null = null;
  private commitAgain = false;
  private readonly log: Logger;

  private readonly processing: CommandProcessorContext;

  constructor(
    private readonly bus: ConsumerHost,
    private readonly group: string,
    handlers: CommandHandlers,
    private readonly topics: string[],
  ) {
    this.log = bus.log.child({ group });
    this.aborted = new Promise((resolve) =>
      this.abortCtl.signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
    );
    this.processing = {
      group,
      handlers,
      producer: bus.producer,
      counters: bus.counters,
      log: this.log,
      stopping: () => this.stopping,
      stopSignal: this.stopCtl.signal,
      abortSignal: this.abortCtl.signal,
    };
  }

  private get copts() {
    return this.bus.opts.consumer ?? {};
  }

  async start(): Promise<void> {
    const c = this.copts;
    const consumer = this.bus.kafka.consumer({
      groupId: namespacedGroup(this.group, this.bus.opts.namespace),
      ...groupTimeouts(c),
      maxWaitTimeInMs: c.maxWaitTimeInMs ?? 1_000,
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 300, maxRetryTime: 5_000, retries: 8 },
    });
    this.consumer = consumer;
    let joined!: () => void;
    const joinedP = new Promise<void>((resolve) => (joined = resolve));
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      // Offsets handled under the previous assignment but not committed yet stay pending only
      // for partitions this member still owns (a commit for a moved partition is the new owner's).
      const owned = e.payload.memberAssignment;
      for (const [k, p] of this.pending)
        if (!owned[p.topic]?.includes(p.partition)) this.pending.delete(k);
      joined();
    });
    consumer.on(consumer.events.CRASH, (e) => {
      if (e.payload.restart || this.stopping || this.consumer !== consumer) return;
      // kafkajs gave up on this consumer (a non-retriable error): start a new one after a pause.
      this.log.error('consumer crashed and will not restart itself; starting a new one', {
        error: e.payload.error?.message,
      });
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (this.stopping || this.consumer !== consumer) return;
        void this.start().catch((err) =>
          this.log.error('consumer restart failed', { error: (err as Error).message }),
        );
      }, 2_000);
    });
    await consumer.connect();
    await consumer.subscribe({
      topics: this.topics,
      fromBeginning: (this.bus.opts.initialOffset ?? 'earliest') === 'earliest',
    });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently:
        c.partitionsConsumedConcurrently ?? this.bus.opts.partitions ?? 8,
      eachMessage: (payload) => this.eachMessage(payload),
    });
    const timeout = sleep(c.joinTimeoutMs ?? 30_000).then(() => 'timeout' as const);
    if ((await Promise.race([joinedP.then(() => 'joined' as const), timeout])) === 'timeout') {
      this.log.warn('consumer has not joined its group yet; it keeps trying in the background');
    }
  }

  private async eachMessage({
    topic,
    partition,
    message,
    heartbeat,
  }: EachMessagePayload): Promise<void> {
    // Stopping: handle nothing new; the message stays uncommitted for the group's next consumer.
    if (this.stopping) return;
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    this.inFlight.add(done);
    const interval = Math.max(100, groupTimeouts(this.copts).heartbeatInterval);
    const beat = setInterval(() => void heartbeat().catch(() => {}), interval);
    try {
      const outcome = await Promise.race([
        processMessage(this.processing, topic, partition, message),
        this.aborted,
      ]);
      if (outcome !== 'ack') return;
      const offset = (BigInt(message.offset) + 1n).toString();
      this.pending.set(`${topic}:${partition}`, { topic, partition, offset });
      if (!this.stopping) this.commitSoon();
    } finally {
      clearInterval(beat);
      this.inFlight.delete(done);
      finish();
    }
  }

  /** Starts a background commit, or asks the one in flight to commit again when it is done. */
  private commitSoon(): void {
    if (this.committing) {
      this.commitAgain = true;
      return;
    }
    this.committing = (async () => {
      do {
        this.commitAgain = false;
        await this.commitPending();
      } while (this.commitAgain && !this.stopping);
    })().finally(() => {
      this.committing = null;
    });
  }

  private async commitPending(): Promise<void> {
    const consumer = this.consumer;
    if (!this.pending.size || !consumer || this.abortCtl.signal.aborted) return;
    const batch = [...this.pending.entries()];
    try {
      await consumer.commitOffsets(batch.map(([, p]) => p));
      for (const [k, p] of batch) if (this.pending.get(k) === p) this.pending.delete(k);
    } catch (err) {
      // Kept pending: the next commit carries it; if none does, the command is redelivered.
      this.log.warn('offset commit failed', { error: (err as Error).message });
    }
  }

  private step(step: ShutdownStep): void {
    try {
      this.bus.opts.onShutdownStep?.(this.group, step);
    } catch {
      /* an observer's error does not stop the shutdown */
    }
  }

  /** Graceful: stop fetching → wait for in-flight handlers → commit → disconnect. */
  stop(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopping = true;
    this.stopped = (async () => {
      this.step('pause');
      if (this.restartTimer) clearTimeout(this.restartTimer);
      try {
        this.consumer?.pause(this.topics.map((topic) => ({ topic })));
      } catch {
        /* not running (crashed and restarting): nothing is fetched either way */
      }
      this.stopCtl.abort(); // handlers waiting to retry give up; their commands stay uncommitted
      this.step('drain');
      while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
      this.step('commit');
      while (this.committing) await this.committing;
      for (let i = 0; i < 3 && this.pending.size; i++) {
        await this.commitPending();
        if (this.pending.size) await sleep(200 * (i + 1));
      }
      if (this.pending.size)
        this.log.warn('stopped with uncommitted offsets; those commands will be redelivered', {
          partitions: this.pending.size,
        });
      this.step('disconnect');
      await this.consumer?.disconnect();
    })();
    return this.stopped;
  }

  /** Crash-like: abandon in-flight handlers, commit nothing more, disconnect. */
  async abort(): Promise<void> {
    this.stopping = true;
    this.stopCtl.abort();
    this.abortCtl.abort();
    this.pending.clear();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.stopped) return this.stopped;
    this.stopped = (async () => {
      try {
        this.consumer?.pause(this.topics.map((topic) => ({ topic })));
      } catch {
        /* not running */
      }
      await this.consumer?.disconnect();
    })();
    return this.stopped;
  }
}
