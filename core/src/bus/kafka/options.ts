/**
 * The Kafka bus adapter's options and public types (the adapter itself: bus.ts), and the timing
 * derived from them: the consumer-group timeouts every member of a group is created with, a
 * promise deadline for admin calls, and the asking again of an admin call a broker answers with
 * a retriable error (a coordinator still loading, a topic's metadata not served yet).
 */
import type { CommandBus, CommandHandlers, ConsumerHandle } from '../port.js';
import type { Logger } from '../../log.js';
import { backoffDelay, sleep } from '../../util.js';

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

/** Session, heartbeat and rebalance timeouts of a group member (defaults: 30 s, ≤ 3 s, 60 s). */
export function groupTimeouts(c: NonNullable<KafkaBusOptions['consumer']>) {
  const sessionTimeout = c.sessionTimeout ?? 30_000;
  return {
    sessionTimeout,
    heartbeatInterval: c.heartbeatInterval ?? Math.min(3_000, Math.floor(sessionTimeout / 3)),
    rebalanceTimeout: c.rebalanceTimeout ?? 60_000,
  };
}

/** `p`, or a rejection after `ms` (the timer never outlives the race). */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}

/**
 * `ask()`, asked again (jittered backoff from 250 ms to 2 s) while it fails with a retriable
 * Kafka error, for up to `withinMs`; then its last error is thrown.
 */
export async function untilAnswered<T>(ask: () => Promise<T>, withinMs: number): Promise<T> {
  const end = Date.now() + withinMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (err) {
      const wait = backoffDelay(attempt, 250, 2_000);
      if (!(err as { retriable?: boolean }).retriable || Date.now() + wait > end) throw err;
      await sleep(wait);
    }
  }
}
