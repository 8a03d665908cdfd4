import { Kafka, Partitioners, logLevel as KafkaLogLevel } from 'kafkajs';
import type {
  Admin,
  Consumer,
  EachMessagePayload,
  KafkaMessage,
  LogEntry,
  Producer,
} from 'kafkajs';
import {
  COMMAND_TOPICS,
  COMMANDS,
  type CommandEnvelope,
  type CommandName,
  type CommandPayload,
} from '@agentfleet/schemas';
import type { BusStats, CommandBus, CommandHandlers, ConsumerHandle } from '../../ports/bus.js';
import { newId, PREFIX } from '../../ids.js';
import { createLogger, type Logger } from '../../log.js';
import { backoffDelay, nowIso, sleep } from '../../util.js';

/**
 * Kafka adapter of the Bus port (kafkajs).
 *
 * Topics: every catalog topic and its `<topic>.dlq` are created at start when missing, with
 * `partitions` partitions (existing topics are left as they are: adding partitions would move
 * keys between partitions and break order per key).
 *
 * Publish: the record key is the catalog's key (the session id for session commands), so a key
 * always lands on one partition; the value is the JSON envelope; `acks: -1`. Publishes of one key
 * are sent one after another (a publish waits for the previous publish of its key to settle), so
 * the log holds them in call order even when the caller does not await each one and a send is
 * retried. The producer is not kafkajs's idempotent producer: it is marked experimental and does
 * not recover from OUT_OF_ORDER_SEQUENCE_NUMBER after a broker restart (tulios/kafkajs#598); a
 * retried send may therefore write a command twice, which handlers absorb by command id like any
 * other redelivery.
 *
 * Consume: one kafkajs consumer per group with `autoCommit: false`; kafkajs hands each
 * partition's messages to `eachMessage` one at a time, in offset order (partitions run
 * concurrently). A message's offset is committed only after its handler resolved; a handler that
 * throws is retried in-process with the catalog's backoff up to `maxAttempts`, then the envelope
 * (with the error) is produced to `<topic>.dlq`, counted, and only then committed. A consumer that
 * dies before committing leaves the command to the group's next consumer (at-least-once).
 * While a handler runs the consumer keeps heartbeating, so a long handler does not cost the
 * group its partitions.
 *
 * Namespace: several platforms can share one cluster. With `namespace` set, the catalog topic
 * `agentfleet.<name>` is `<namespace>.<name>` (and its `.dlq`), and consumer group `g` is
 * `<namespace>.<g>`; unset, the catalog's names are used as they are.
 *
 * A group that has no committed offset yet starts at `initialOffset`: 'earliest' (default:
 * nothing published before the group's first consumer is skipped) or 'latest' (the end of each
 * partition as of consume(); the offsets are committed before consume() returns, so every command
 * published after consume() resolved reaches the group even if its first consumer dies before
 * handling anything).
 */

export type ShutdownStep = 'pause' | 'drain' | 'commit' | 'disconnect';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** Partitions of each topic created at start (default 8). */
  partitions?: number;
  /** Isolates this platform's topics and consumer groups on a shared cluster (see above). */
  namespace?: string;
  /** Replication factor of each topic created at start (default 1). */
  replicationFactor?: number;
  /** kafkajs's own log level (default 'error'); its lines go through `logger`. */
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  logger?: Logger;
  /** Where a consumer group with no committed offset starts (see above; default 'earliest'). */
  initialOffset?: 'earliest' | 'latest';
  connectionTimeout?: number;
  requestTimeout?: number;
  consumer?: {
    sessionTimeout?: number;
    heartbeatInterval?: number;
    rebalanceTimeout?: number;
    /** Longest a fetch waits for data; also bounds how long stop() waits for the fetch loop. */
    maxWaitTimeInMs?: number;
    /** Partitions handled concurrently per group (default: `partitions`). */
    partitionsConsumedConcurrently?: number;
    /** consume() resolves once the consumer joined its group, or after this long (default 30 s). */
    joinTimeoutMs?: number;
  };
  /** How long a publish keeps retrying while no broker answers (default retries 10, ≤ 5 s apart: ~35 s). */
  producerRetry?: { retries?: number; initialRetryTime?: number; maxRetryTime?: number };
  /** Called as ConsumerHandle.stop() enters each step: pause → drain → commit → disconnect. */
  onShutdownStep?: (group: string, step: ShutdownStep) => void;
}

export interface KafkaConsumerHandle extends ConsumerHandle {
  /**
   * What a crash looks like to the group: stop at once, abandon in-flight handlers (their
   * outcome is ignored), commit nothing more, disconnect. Uncommitted commands go to the group's
   * next consumer.
   */
  abort(): Promise<void>;
}

export interface KafkaBus extends CommandBus {
  consume(group: string, handlers: CommandHandlers): Promise<KafkaConsumerHandle>;
  /** The topics this bus created or found at start (catalog topics, namespaced, and their `.dlq`). */
  readonly topics: readonly string[];
}

/** The record produced to `<topic>.dlq`. */
export interface DeadLetter {
  /** The envelope as it failed (null when the message was not a readable envelope). */
  envelope: CommandEnvelope | null;
  /** The raw value, only when it was not a readable envelope. */
  raw?: string;
  error: string;
  group: string;
  attempts: number;
  source: { topic: string; partition: number; offset: string };
  failed_at: string;
}

export const dlqTopic = (topic: string) => `${topic}.dlq`;

/** The Kafka topic of a catalog topic under a namespace (`agentfleet.x` → `<namespace>.x`). */
export function namespacedTopic(catalogTopic: string, namespace?: string): string {
  if (!namespace) return catalogTopic;
  const rest = catalogTopic.startsWith('agentfleet.')
    ? catalogTopic.slice('agentfleet.'.length)
    : catalogTopic;
  return `${namespace}.${rest}`;
}

/** The Kafka consumer group id of a group under a namespace. */
export const namespacedGroup = (group: string, namespace?: string) =>
  namespace ? `${namespace}.${group}` : group;

const KAFKAJS_LEVEL = {
  nothing: KafkaLogLevel.NOTHING,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
} as const;

export async function createKafkaBus(opts: KafkaBusOptions): Promise<KafkaBus> {
  const bus = new KafkaCommandBus(opts);
  try {
    await bus.start();
  } catch (err) {
    await bus.close().catch(() => {});
    throw err;
  }
  return bus;
}

class KafkaCommandBus implements KafkaBus {
  readonly topics: readonly string[];
  readonly kafka: Kafka;
  readonly log: Logger;
  readonly producer: Producer;
  private readonly admin: Admin;
  private readonly groups = new Map<string, GroupConsumer>();
  private readonly keyChains = new Map<string, Promise<unknown>>();
  readonly counters: BusStats = { published: 0, handled: 0, retried: 0, deadLettered: 0 };
  private closed = false;
  private closing: Promise<void> | null = null;

  constructor(readonly opts: KafkaBusOptions) {
    if (opts.namespace !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/.test(opts.namespace))
      throw new Error(`invalid Kafka namespace ${opts.namespace}`);
    this.topics = COMMAND_TOPICS.map((t) => this.topicOf(t)).flatMap((t) => [t, dlqTopic(t)]);
    this.log = (opts.logger ?? createLogger('info')).child({
      component: 'kafka-bus',
      client_id: opts.clientId,
    });
    const log = this.log;
    this.kafka = new Kafka({
      clientId: opts.clientId,
      brokers: opts.brokers,
      connectionTimeout: opts.connectionTimeout ?? 3_000,
      requestTimeout: opts.requestTimeout ?? 30_000,
      logLevel: KAFKAJS_LEVEL[opts.logLevel ?? 'error'],
      logCreator: () => (entry: LogEntry) => {
        const { message, ...fields } = entry.log;
        const line = `kafkajs ${entry.namespace}: ${message}`;
        if (entry.level <= KafkaLogLevel.ERROR) log.error(line, fields);
        else if (entry.level === KafkaLogLevel.WARN) log.warn(line, fields);
        else if (entry.level === KafkaLogLevel.INFO) log.info(line, fields);
        else log.debug(line, fields);
      },
      retry: { initialRetryTime: 300, maxRetryTime: 5_000, retries: 8 },
    });
    this.admin = this.kafka.admin();
    this.producer = this.kafka.producer({
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      idempotent: false,
      retry: { initialRetryTime: 200, maxRetryTime: 5_000, retries: 10, ...opts.producerRetry },
    });
  }

  topicOf(catalogTopic: string): string {
    return namespacedTopic(catalogTopic, this.opts.namespace);
  }

  async start(): Promise<void> {
    await this.admin.connect();
    await this.ensureTopics();
    await this.producer.connect();
  }

  private async ensureTopics(): Promise<void> {
    const partitions = this.opts.partitions ?? 8;
    const replicationFactor = this.opts.replicationFactor ?? 1;
    for (let round = 1; ; round++) {
      const existing = new Set(await this.admin.listTopics());
      const missing = this.topics.filter((t) => !existing.has(t));
      if (!missing.length) break;
      try {
        await this.admin.createTopics({
          topics: missing.map((topic) => ({ topic, numPartitions: partitions, replicationFactor })),
          waitForLeaders: true,
        });
        break;
      } catch (err) {
        // Another process created some of them at the same moment: look again.
        if (round >= 3) throw err;
      }
    }
    const { topics } = await this.admin.fetchTopicMetadata({ topics: [...this.topics] });
    for (const t of topics) {
      if (t.partitions.length !== partitions) {
        this.log.warn('topic exists with another partition count; left as it is', {
          topic: t.name,
          partitions: t.partitions.length,
          configured: partitions,
        });
      }
    }
  }

  async publish<N extends CommandName>(
    name: N,
    payload: CommandPayload<N>,
    options: { id?: string } = {},
  ): Promise<string> {
    if (this.closed) throw new Error('bus is closed');
    const def = COMMANDS[name];
    if (!def) throw new Error(`unknown command ${String(name)}`);
    const envelope: CommandEnvelope<N> = {
      v: 1,
      id: options.id ?? newId(PREFIX.command),
      name,
      payload,
      published_at: nowIso(),
      attempt: 1,
    };
    const key = (def.key as (p: CommandPayload<N>) => string)(payload);
    const value = JSON.stringify(envelope);
    const topic = this.topicOf(def.topic);
    const chainKey = `${topic}\u0000${key}`;
    const previous = this.keyChains.get(chainKey) ?? Promise.resolve();
    const send = previous
      .catch(() => {})
      .then(() =>
        this.producer.send({
          topic,
          acks: -1,
          messages: [{ key, value, headers: { 'command-name': name, 'command-id': envelope.id } }],
        }),
      );
    this.keyChains.set(chainKey, send);
    try {
      await send;
    } finally {
      if (this.keyChains.get(chainKey) === send) this.keyChains.delete(chainKey);
    }
    this.counters.published++;
    return envelope.id;
  }

  async consume(group: string, handlers: CommandHandlers): Promise<KafkaConsumerHandle> {
    if (this.closed) throw new Error('bus is closed');
    if (this.groups.has(group))
      throw new Error(`consumer group ${group} already consuming in this process`);
    const names = (Object.keys(handlers) as CommandName[]).filter((n) => handlers[n]);
    const topics = [...new Set(names.map((n) => this.topicOf(COMMANDS[n].topic)))];
    if (!topics.length) throw new Error('consume needs at least one handler');
    const gc = new GroupConsumer(this, group, handlers, topics);
    this.groups.set(group, gc);
    try {
      await this.initGroupOffsets(namespacedGroup(group, this.opts.namespace), topics);
      await gc.start();
    } catch (err) {
      this.groups.delete(group);
      await gc.abort().catch(() => {});
      throw err;
    }
    return {
      stop: () => gc.stop().finally(() => this.groups.delete(group)),
      abort: () => gc.abort().finally(() => this.groups.delete(group)),
    };
  }

  /**
   * With initialOffset 'latest': when the group is new (no running member) and has partitions
   * without a committed offset, a short-lived member of the group joins with everything paused,
   * commits the current end of those partitions and leaves. (kafkajs's admin.setOffsets does the
   * same but waits out a 5 s fetch.)
   */
  private async initGroupOffsets(group: string, topics: string[]): Promise<void> {
    if ((this.opts.initialOffset ?? 'earliest') !== 'latest') return;
    const missing = async () => {
      const out: Array<{ topic: string; partition: number }> = [];
      for (const { topic, partitions } of await this.admin.fetchOffsets({
        groupId: group,
        topics,
      })) {
        for (const p of partitions)
          if (Number(p.offset) < 0) out.push({ topic, partition: p.partition });
      }
      return out;
    };
    if (!(await missing()).length) return;
    const { groups } = await this.admin.describeGroups([group]);
    if (groups[0] && !['Empty', 'Dead'].includes(groups[0].state)) return; // a running member already started it

    const c = this.opts.consumer ?? {};
    const init = this.kafka.consumer({
      groupId: group,
      ...groupTimeouts(c),
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
    });
    try {
      await init.connect();
      await init.subscribe({ topics });
      const joined = new Promise<void>((resolve) =>
        init.on(init.events.GROUP_JOIN, () => resolve()),
      );
      const running = init.run({ autoCommit: false, eachBatch: async () => {} });
      init.pause(topics.map((topic) => ({ topic }))); // before the first fetch: nothing is read
      await running;
      await withTimeout(joined, c.joinTimeoutMs ?? 30_000);
      const todo = await missing();
      const ends = new Map<string, string>();
      for (const topic of new Set(todo.map((t) => t.topic))) {
        for (const p of await this.admin.fetchTopicOffsets(topic))
          ends.set(`${topic}:${p.partition}`, p.high);
      }
      if (todo.length)
        await init.commitOffsets(
          todo.map((t) => ({ ...t, offset: ends.get(`${t.topic}:${t.partition}`) ?? '0' })),
        );
    } catch (err) {
      this.log.warn('could not set the initial offsets of a new group', {
        group,
        error: (err as Error).message,
      });
    } finally {
      await init.disconnect().catch(() => {});
    }
  }

  /** Produces a dead letter; resolves false when it gave up because the consumer is stopping. */
  async produceDeadLetter(
    topic: string,
    key: Buffer | null,
    letter: DeadLetter,
    gc: GroupConsumer,
  ): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.producer.send({
          topic: dlqTopic(topic),
          acks: -1,
          messages: [
            {
              key,
              value: JSON.stringify(letter),
              headers: {
                'command-name': letter.envelope?.name ?? '',
                'command-id': letter.envelope?.id ?? '',
                group: letter.group,
              },
            },
          ],
        });
        this.counters.deadLettered++;
        return true;
      } catch (err) {
        this.log.error('dead-letter produce failed; retrying', {
          topic: dlqTopic(topic),
          group: letter.group,
          error: (err as Error).message,
        });
        if (gc.stopping) return false;
        try {
          await sleep(backoffDelay(Math.min(attempt, 6), 500, 10_000), gc.stopSignal);
        } catch {
          return false;
        }
      }
    }
  }

  stats(): BusStats {
    return { ...this.counters };
  }

  async healthy(): Promise<boolean> {
    if (this.closed) return false;
    try {
      const cluster = await withTimeout(this.admin.describeCluster(), 5_000);
      return cluster.brokers.length > 0;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = (async () => {
      await Promise.allSettled([...this.groups.values()].map((g) => g.stop()));
      this.groups.clear();
      await Promise.allSettled([...this.keyChains.values()]);
      await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
    })();
    return this.closing;
  }
}

type Outcome = 'ack' | 'leave';

class GroupConsumer {
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
  private readonly log: Logger;

  constructor(
    private readonly bus: KafkaCommandBus,
    private readonly group: string,
    private readonly handlers: CommandHandlers,
    private readonly topics: string[],
  ) {
    this.log = bus.log.child({ group });
    this.aborted = new Promise((resolve) =>
      this.abortCtl.signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
    );
  }

  get stopSignal(): AbortSignal {
    return this.stopCtl.signal;
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
      const outcome = await Promise.race([this.process(topic, partition, message), this.aborted]);
      if (outcome !== 'ack') return;
      const offset = (BigInt(message.offset) + 1n).toString();
      this.pending.set(`${topic}:${partition}`, { topic, partition, offset });
      if (!this.stopping) await this.commitPending();
    } finally {
      clearInterval(beat);
      this.inFlight.delete(done);
      finish();
    }
  }

  private async process(topic: string, partition: number, message: KafkaMessage): Promise<Outcome> {
    const source = { topic, partition, offset: message.offset };
    let env: CommandEnvelope;
    try {
      env = parseEnvelope(message.value);
    } catch (err) {
      // Not a command this version can read: retrying will not help.
      const letter: DeadLetter = {
        envelope: null,
        raw: message.value?.toString('utf8') ?? '',
        error: errorText(err),
        group: this.group,
        attempts: 0,
        source,
        failed_at: nowIso(),
      };
      return (await this.bus.produceDeadLetter(topic, message.key, letter, this)) ? 'ack' : 'leave';
    }
    const handler = this.handlers[env.name] as ((e: CommandEnvelope) => Promise<void>) | undefined;
    if (!handler) return 'ack'; // a command of the same topic that this group does not handle
    const { retry } = COMMANDS[env.name];
    for (let attempt = 1; ; attempt++) {
      const delivery = { ...env, attempt } as CommandEnvelope;
      try {
        await handler(delivery);
        if (!this.abortCtl.signal.aborted) this.bus.counters.handled++;
        return 'ack';
      } catch (err) {
        if (this.stopping) return 'leave'; // redelivered to the group's next consumer
        if (attempt >= retry.maxAttempts) {
          const letter: DeadLetter = {
            envelope: delivery,
            error: errorText(err),
            group: this.group,
            attempts: attempt,
            source,
            failed_at: nowIso(),
          };
          this.log.warn('command dead-lettered', {
            id: env.id,
            name: env.name,
            attempts: attempt,
            error: (err as Error)?.message,
          });
          return (await this.bus.produceDeadLetter(topic, message.key, letter, this))
            ? 'ack'
            : 'leave';
        }
        this.bus.counters.retried++;
        try {
          await sleep(backoffDelay(attempt, retry.baseDelayMs, retry.maxDelayMs), this.stopSignal);
        } catch {
          return 'leave';
        }
      }
    }
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

function groupTimeouts(c: NonNullable<KafkaBusOptions['consumer']>) {
  const sessionTimeout = c.sessionTimeout ?? 30_000;
  return {
    sessionTimeout,
    heartbeatInterval: c.heartbeatInterval ?? Math.min(3_000, Math.floor(sessionTimeout / 3)),
    rebalanceTimeout: c.rebalanceTimeout ?? 60_000,
  };
}

function parseEnvelope(value: Buffer | null): CommandEnvelope {
  if (!value) throw new Error('empty message');
  const env = JSON.parse(value.toString('utf8')) as CommandEnvelope;
  if (!env || env.v !== 1 || typeof env.id !== 'string' || typeof env.name !== 'string')
    throw new Error('not a v1 command envelope');
  if (!Object.hasOwn(COMMANDS, env.name)) throw new Error(`unknown command ${env.name}`);
  return env;
}

function errorText(err: unknown): string {
  return String((err as Error)?.stack ?? err);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}
