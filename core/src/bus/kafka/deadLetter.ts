/**
 * Dead letters of the Kafka bus: a command whose handler kept failing after its catalog's
 * `maxAttempts`, or a message that is not a readable v1 envelope, is produced (acks -1) to
 * `<topic>.dlq` with the error, the group, the attempts and where it came from, keyed like the
 * original. The produce is retried with backoff until it lands (only then is the command
 * counted and its offset committed) or the consumer stops (then nothing is committed and the
 * group's next consumer gets the command again). Proved by core/test/bus.contract.ts
 * ("dead-letters a command that keeps failing after maxAttempts, counts it once, and moves on to
 * the next", run against Kafka by core/test/bus.test.ts, which reads the `.dlq` topic back).
 */
import type { Producer } from 'kafkajs';
import type { CommandEnvelope } from '@agentfleet/schemas';
import type { BusStats } from '../port.js';
import type { Logger } from '../../log.js';
import { backoffDelay, sleep } from '../../util.js';
import { dlqTopic } from './topics.js';

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

/** What a dead-letter produce needs from its bus and consumer. */
export interface DeadLetterContext {
  producer: Producer;
  counters: BusStats;
  log: Logger;
  /** True once the consumer is stopping: the produce gives up instead of retrying. */
  stopping(): boolean;
  /** Aborted when the consumer stops: ends a backoff wait at once. */
  stopSignal: AbortSignal;
}

/** Produces a dead letter; resolves false when it gave up because the consumer is stopping. */
export async function produceDeadLetter(
  ctx: DeadLetterContext,
  topic: string,
  key: Buffer | null,
  letter: DeadLetter,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.producer.send({
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
      ctx.counters.deadLettered++;
      return true;
    } catch (err) {
      ctx.log.error('dead-letter produce failed; retrying', {
        topic: dlqTopic(topic),
        group: letter.group,
        error: (err as Error).message,
      });
      if (ctx.stopping()) return false;
      try {
        await sleep(backoffDelay(Math.min(attempt, 6), 500, 10_000), ctx.stopSignal);
      } catch {
        return false;
      }
    }
  }
}
