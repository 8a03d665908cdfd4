/**
 * Kafka adapter of the Bus port (kafkajs), core/src/bus/port.ts: the bus itself (client,
 * publish, consume wiring, health, close). Its parts, one job each: options.ts (options and
 * public types), topics.ts (names, namespaces, topic creation), groupOffsets.ts (where a new
 * group starts), groupConsumer.ts (a group member: partitions, commits, shutdown),
 * commandProcessor.ts (one message: handler, retries), deadLetter.ts (`<topic>.dlq`).
 * Proved by core/test/bus.contract.ts (run against this adapter by core/test/bus.test.ts "Kafka
 * bus", with a broker: KAFKA_BROKERS) and bus.test.ts's SIGKILL, namespace and broker-restart
 * tests.
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
import { Kafka, Partitioners, logLevel as KafkaLogLevel } from 'kafkajs';
import type { Admin, LogEntry, Producer } from 'kafkajs';
import {
  COMMAND_TOPICS,
  COMMANDS,
  type CommandEnvelope,
  type CommandName,
  type CommandPayload,
} from '@agentfleet/schemas';
import type { BusStats, CommandHandlers } from '../port.js';
import { newId, PREFIX } from '../../ids.js';
import { createLogger, type Logger } from '../../log.js';
import { nowIso } from '../../util.js';
import { GroupConsumer, type ConsumerHost } from './groupConsumer.js';
import { clampKafkaRequestQueueTimeout } from './negativeTimeout.js';
import { initGroupOffsets } from './groupOffsets.js';
import {
  withTimeout,
  type KafkaBus,
  type KafkaBusOptions,
  type KafkaConsumerHandle,
} from './options.js';
import { dlqTopic, ensureTopics, namespacedGroup, namespacedTopic } from './topics.js';

// Before any client exists: kafkajs's negative throttle-check delay (./negativeTimeout.ts).
clampKafkaRequestQueueTimeout();

export type { DeadLetter } from './deadLetter.js';
export type { KafkaBus, KafkaBusOptions, KafkaConsumerHandle, ShutdownStep } from './options.js';
export { dlqTopic, namespacedGroup, namespacedTopic } from './topics.js';

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

class KafkaCommandBus implements KafkaBus, ConsumerHost {
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
    await ensureTopics(this.admin, this.topics, {
      partitions: this.opts.partitions ?? 8,
      replicationFactor: this.opts.replicationFactor ?? 1,
      log: this.log,
    });
    await this.producer.connect();
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
      await initGroupOffsets(
        this.kafka,
        this.admin,
        this.opts,
        this.log,
        namespacedGroup(group, this.opts.namespace),
        topics,
      );
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
