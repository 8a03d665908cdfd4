/**
 * The worker's integration router (consumer group `integration-router`): verified provider
 * events start or continue their thread's session, and finished turns post their answers back
 * (core/src/integrations/conversations.ts owns both; this file owns the consumer and its stop).
 * A provider refusal of a reply is logged and not retried (the thread's replied_seq still
 * moves, so one bad post does not repeat forever); a store or bus failure throws and the bus
 * retries. Proved by test/e2e/integrations/*.test.ts.
 */
import {
  IntegrationError,
  type CommandBus,
  type Conversations,
  type InboundEvent,
  type Logger,
} from '@agentfleet/core';

export interface IntegrationRouter {
  stop(): Promise<void>;
}

export async function startIntegrationRouter(opts: {
  bus: Pick<CommandBus, 'consume'>;
  conversations: Pick<Conversations, 'handleEvent' | 'handleReply'>;
  log: Logger;
}): Promise<IntegrationRouter> {
  const { conversations, log } = opts;
  const consumer = await opts.bus.consume('integration-router', {
    'integration.event.received': async (cmd) => {
      const p = cmd.payload;
      try {
        await conversations.handleEvent(
          p.tenant_id,
          p.install_id,
          p.delivery_id,
          p.event as unknown as InboundEvent,
        );
      } catch (err) {
        if (!(err instanceof IntegrationError) && !isRefusal(err)) throw err;
        log.warn('integration event not turned into a session message', {
          install: p.install_id,
          reason: (err as Error).message,
        });
      }
    },
    'integration.reply.requested': async (cmd) => {
      const p = cmd.payload;
      try {
        await conversations.handleReply(p.tenant_id, p.session_id, p.seq);
      } catch (err) {
        if (!(err instanceof IntegrationError)) throw err;
        log.warn('integration reply refused by the provider', {
          session: p.session_id,
          status: err.status,
          reason: err.message,
        });
      }
    },
  });
  return { stop: () => consumer.stop() };
}

/** A 4xx of the session API (agent archived, budget, bad vault): retrying cannot help. */
const isRefusal = (err: unknown) => {
  const status = (err as { status?: unknown })?.status;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 429;
};
