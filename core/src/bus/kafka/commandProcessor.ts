/**
 * One consumed Kafka message, handled to an outcome: 'ack' (commit its offset) or 'leave'
 * (commit nothing: the group's next consumer gets it again).
 * - A value that is not a readable v1 envelope of a known command is dead-lettered at once
 *   (retrying cannot help), then acked.
 * - A command no handler of this group takes is acked (topics are shared by several commands).
 * - A handler that throws is retried in-process with the catalog's backoff (each delivery's
 *   `attempt` counts up) up to `maxAttempts`, then dead-lettered and acked; a dead letter that
 *   could not be produced before the consumer stopped is left.
 * - Once the consumer is stopping, a failing handler or one waiting to retry is left.
 * Proved by core/test/bus.contract.ts ("retries a failing handler with backoff, then
 * acknowledges it once it succeeds", "dead-letters a command that keeps failing after
 * maxAttempts, …") run against Kafka by core/test/bus.test.ts.
 */
import type { KafkaMessage } from 'kafkajs';
import { COMMANDS, type CommandEnvelope } from '@agentfleet/schemas';
import type { CommandHandlers } from '../port.js';
import { backoffDelay, nowIso, sleep } from '../../util.js';
import { produceDeadLetter, type DeadLetter, type DeadLetterContext } from './deadLetter.js';

export type Outcome = 'ack' | 'leave';

export interface CommandProcessorContext extends DeadLetterContext {
  group: string;
  handlers: CommandHandlers;
  /** Aborted when the consumer is aborted (a crash): a late success is not counted. */
  abortSignal: AbortSignal;
}

export async function processMessage(
  ctx: CommandProcessorContext,
  topic: string,
  partition: number,
  message: KafkaMessage,
): Promise<Outcome> {
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
      group: ctx.group,
      attempts: 0,
      source,
      failed_at: nowIso(),
    };
    return (await produceDeadLetter(ctx, topic, message.key, letter)) ? 'ack' : 'leave';
  }
  const handler = ctx.handlers[env.name] as ((e: CommandEnvelope) => Promise<void>) | undefined;
  if (!handler) return 'ack'; // a command of the same topic that this group does not handle
  const { retry } = COMMANDS[env.name];
  for (let attempt = 1; ; attempt++) {
    const delivery = { ...env, attempt } as CommandEnvelope;
    try {
      await handler(delivery);
      if (!ctx.abortSignal.aborted) ctx.counters.handled++;
      return 'ack';
    } catch (err) {
      if (ctx.stopping()) return 'leave'; // redelivered to the group's next consumer
      if (attempt >= retry.maxAttempts) {
        const letter: DeadLetter = {
          envelope: delivery,
          error: errorText(err),
          group: ctx.group,
          attempts: attempt,
          source,
          failed_at: nowIso(),
        };
        ctx.log.warn('command dead-lettered', {
          id: env.id,
          name: env.name,
          attempts: attempt,
          error: (err as Error)?.message,
        });
        return (await produceDeadLetter(ctx, topic, message.key, letter)) ? 'ack' : 'leave';
      }
      ctx.counters.retried++;
      try {
        await sleep(backoffDelay(attempt, retry.baseDelayMs, retry.maxDelayMs), ctx.stopSignal);
      } catch {
        return 'leave';
      }
    }
  }
}

/** A message's value as a v1 command envelope of a known command; throws otherwise. */
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
