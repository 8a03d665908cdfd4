import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Obj } from './common.js';

/**
 * The command catalog: every command the gateway publishes and a worker consumes.
 * Delivery is at-least-once and ordered per key; handlers are idempotent (a redelivered
 * command appends nothing twice). After `retry.maxAttempts` failures a command goes to the
 * topic's dead-letter topic (`<topic>.dlq`).
 */
export interface CommandDefinition<S extends TSchema = TSchema> {
  topic: string;
  /** The partition key: session commands are keyed by session id (order per session). */
  key: (payload: Static<S>) => string;
  payload: S;
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  /** A handler running longer than this is considered stuck (lease and recovery take over). */
  timeoutMs: number;
  /** Worker kind (consumer group) that handles it. */
  group:
    | 'turn-runner'
    | 'sandbox-manager'
    | 'webhook-sender'
    | 'dream-runner'
    | 'integration-router'
    | 'eval-runner';
}

const SessionRef = { tenant_id: Type.String(), session_id: Type.String() };

export const TurnRequested = Obj({
  ...SessionRef,
  seq: Type.Integer({ minimum: 0 }),
  reason: Type.Optional(Type.String()),
});
export const SessionCancelRequested = Obj({ ...SessionRef, reason: Type.String() });
/** One attempt of a webhook delivery (core/src/webhooks): the delivery record holds the state. */
export const WebhookDeliveryRequested = Obj({
  tenant_id: Type.String(),
  delivery_id: Type.String(),
});
/** Run a dream (core/src/dreams): the dream record holds the state and the claim. */
export const DreamRunRequested = Obj({ tenant_id: Type.String(), dream_id: Type.String() });
/** Start one case of an eval run (core/src/evals): the case record holds the state and the claim. */
export const EvalCaseRequested = Obj({
  tenant_id: Type.String(),
  eval_id: Type.String(),
  case_id: Type.String(),
});
/** A case's session went idle at `seq`: judge the case (core/src/evals). */
export const EvalCaseFinished = Obj({
  tenant_id: Type.String(),
  eval_id: Type.String(),
  case_id: Type.String(),
  seq: Type.Integer({ minimum: 0 }),
});

/**
 * A verified third-party webhook event for one tenant's install (core/src/integrations): the
 * normalized event (core/src/integrations/port.ts InboundEvent), never the raw body. Keyed by
 * the thread, so events of one conversation are handled in order.
 */
export const IntegrationEventReceived = Obj({
  tenant_id: Type.String(),
  install_id: Type.String(),
  delivery_id: Type.String(),
  thread_key: Type.String(),
  event: Type.Record(Type.String(), Type.Unknown()),
});
/** Post the agent's answers of a finished turn back to the integration thread. */
export const IntegrationReplyRequested = Obj({
  ...SessionRef,
  seq: Type.Integer({ minimum: 0 }),
});

export const COMMANDS = {
  'session.turn.requested': {
    topic: 'agentfleet.session-commands',
    key: (p: Static<typeof TurnRequested>) => p.session_id,
    payload: TurnRequested,
    retry: { maxAttempts: 5, baseDelayMs: 200, maxDelayMs: 5_000 },
    timeoutMs: 30 * 60_000,
    group: 'turn-runner',
  },
  'session.cancel.requested': {
    topic: 'agentfleet.session-commands',
    key: (p: Static<typeof SessionCancelRequested>) => p.session_id,
    payload: SessionCancelRequested,
    retry: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 2_000 },
    timeoutMs: 60_000,
    group: 'turn-runner',
  },
  // The handler never throws for an endpoint's answer (the delivery record counts attempts and
  // the worker's due-time scan retries); these retries only cover a store failure.
  'webhook.delivery.requested': {
    topic: 'agentfleet.webhook-commands',
    key: (p: Static<typeof WebhookDeliveryRequested>) => p.delivery_id,
    payload: WebhookDeliveryRequested,
    retry: { maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 5_000 },
    timeoutMs: 60_000,
    group: 'webhook-sender',
  },
  // The handler claims the dream with a compare-and-swap and never throws for the dream's own
  // failure (it is recorded on the dream); a lost command is picked up by the worker's scan.
  'dream.run.requested': {
    topic: 'agentfleet.dream-commands',
    key: (p: Static<typeof DreamRunRequested>) => p.dream_id,
    payload: DreamRunRequested,
    retry: { maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 5_000 },
    timeoutMs: 24 * 3600_000,
    group: 'dream-runner',
  },
  // Idempotent per delivery id (the thread records the deliveries it turned into messages).
  'integration.event.received': {
    topic: 'agentfleet.integration-commands',
    key: (p: Static<typeof IntegrationEventReceived>) => p.thread_key,
    payload: IntegrationEventReceived,
    retry: { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 10_000 },
    timeoutMs: 120_000,
    group: 'integration-router',
  },
  // The thread's replied_seq makes a redelivery post nothing twice once the first one recorded.
  'integration.reply.requested': {
    topic: 'agentfleet.integration-commands',
    key: (p: Static<typeof IntegrationReplyRequested>) => p.session_id,
    payload: IntegrationReplyRequested,
    retry: { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 30_000 },
    timeoutMs: 120_000,
    group: 'integration-router',
  },
  // Both claim the case with a compare-and-swap on its record: a redelivery or a second worker
  // finds it claimed or done and does nothing; a lost command is re-driven by the eval scan.
  'eval.case.requested': {
    topic: 'agentfleet.eval-commands',
    key: (p: Static<typeof EvalCaseRequested>) => p.case_id,
    payload: EvalCaseRequested,
    retry: { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 10_000 },
    timeoutMs: 120_000,
    group: 'eval-runner',
  },
  'eval.case.finished': {
    topic: 'agentfleet.eval-commands',
    key: (p: Static<typeof EvalCaseFinished>) => p.case_id,
    payload: EvalCaseFinished,
    retry: { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 10_000 },
    timeoutMs: 15 * 60_000,
    group: 'eval-runner',
  },
} as const satisfies Record<string, CommandDefinition<any>>;

export type CommandName = keyof typeof COMMANDS;
export type CommandPayload<N extends CommandName> = Static<(typeof COMMANDS)[N]['payload']>;

/** Wire envelope, versioned so a rolling deploy can read old and new shapes. */
export interface CommandEnvelope<N extends CommandName = CommandName> {
  v: 1;
  id: string;
  name: N;
  payload: CommandPayload<N>;
  published_at: string;
  attempt: number;
}

export const COMMAND_TOPICS: string[] = [...new Set(Object.values(COMMANDS).map((c) => c.topic))];
