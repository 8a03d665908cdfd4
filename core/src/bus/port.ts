import type { CommandEnvelope, CommandName, CommandPayload } from '@agentfleet/schemas';

/**
 * Bus port. Guarantees (core/test/bus.contract.ts): at-least-once delivery; order per key
 * within a topic; a message is acknowledged only after its handler resolved (its side effects
 * landed); a handler that throws is retried with backoff per the catalog and, after the last
 * attempt, dead-lettered and counted; a crash before ack means redelivery.
 */
export type CommandHandler<N extends CommandName> = (cmd: CommandEnvelope<N>) => Promise<void>;
export type CommandHandlers = { [N in CommandName]?: CommandHandler<N> };

export interface ConsumerHandle {
  /** Stop fetching, finish in-flight handlers, commit, disconnect. */
  stop(): Promise<void>;
}

export interface BusStats {
  published: number;
  handled: number;
  retried: number;
  deadLettered: number;
}

export interface CommandBus {
  publish<N extends CommandName>(
    name: N,
    payload: CommandPayload<N>,
    options?: { id?: string },
  ): Promise<string>;
  consume(group: string, handlers: CommandHandlers): Promise<ConsumerHandle>;
  stats(): BusStats;
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}
