/**
 * Outbound webhooks (Standard Webhooks, received with the SDK's `client.beta.webhooks.unwrap`):
 * the event types the platform emits, the per-tenant endpoint bodies under
 * /v1/svc/webhook_endpoints and the served endpoint and delivery shapes. The served endpoint
 * never carries its secret (only create and rotate_secret answer it, once). Behaviour:
 * core/src/webhooks/; proved by test/webhooks*.test.ts.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Obj } from './common.js';

/**
 * Every event type the platform emits, each one of the SDK's BetaWebhookEventData `type`s: the
 * lifecycle of agents, environments, sessions, deployments, deployment runs, vaults and their
 * credentials, memory stores, and the session status hints. An endpoint's filter may name only
 * these; the SDK types the platform has no object for are listed in docs/COVERAGE.md. Every one
 * is delivered and unwrapped in test/e2e/webhooks/webhooks-types.test.ts.
 */
export const WEBHOOK_EVENT_TYPES = [
  'agent.created',
  'agent.updated',
  'agent.archived',
  'environment.created',
  'environment.updated',
  'environment.archived',
  'environment.deleted',
  'session.created',
  'session.updated',
  'session.running',
  'session.idled',
  'session.requires_action',
  'session.budget_reached',
  'session.outcome_evaluation_ended',
  'session.archived',
  'session.deleted',
  'session.status_run_started',
  'session.status_idled',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.thread_created',
  'session.thread_idled',
  'session.thread_terminated',
  'deployment.created',
  'deployment.updated',
  'deployment.paused',
  'deployment.unpaused',
  'deployment.archived',
  'deployment_run.started',
  'deployment_run.succeeded',
  'deployment_run.failed',
  'vault.created',
  'vault.archived',
  'vault.deleted',
  'vault_credential.created',
  'vault_credential.archived',
  'vault_credential.deleted',
  'vault_credential.refresh_failed',
  'memory_store.created',
  'memory_store.archived',
  'memory_store.deleted',
] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Delivery attempts per (event, endpoint), and the backoff bounds between them (spec Limits). */
export const WEBHOOK_DELIVERY = { maxAttempts: 3, minDelayMs: 5_000, maxDelayMs: 120_000 } as const;

const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Description = Type.String({ maxLength: 512 });
/** Checked against WEBHOOK_EVENT_TYPES by the service (a 400 naming `event_types[i]`). */
const EventTypes = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 64 });

export const WebhookEndpointCreate = Obj({
  url: Url,
  /** Absent or empty: every event type. */
  event_types: Type.Optional(Nullable(EventTypes)),
  description: Type.Optional(Nullable(Description)),
});
export type WebhookEndpointCreate = Static<typeof WebhookEndpointCreate>;

export const WebhookEndpointUpdate = Obj({
  url: Type.Optional(Url),
  event_types: Type.Optional(Nullable(EventTypes)),
  description: Type.Optional(Nullable(Description)),
  /** false re-enables an endpoint (clears `disabled_reason`); true disables it by hand. */
  disabled: Type.Optional(Type.Boolean()),
});
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>;

export const WebhookEndpointListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
});
export type WebhookEndpointListQuery = Static<typeof WebhookEndpointListQuery>;

export const WebhookDisabledReason = Obj({
  /** `redirect`: a delivery got a 3xx (non-retryable); `manual`: an update set disabled. */
  type: Type.Union([Type.Literal('redirect'), Type.Literal('manual')]),
  message: Type.String(),
  status: Nullable(Type.Integer()),
  delivery_id: Nullable(Type.String()),
  at: Type.String(),
});
export type WebhookDisabledReason = Static<typeof WebhookDisabledReason>;

export const WebhookEndpoint = Obj({
  type: Type.Literal('webhook_endpoint'),
  id: Type.String(),
  url: Type.String(),
  /** Empty: every event type. */
  event_types: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  disabled: Type.Boolean(),
  disabled_reason: Nullable(WebhookDisabledReason),
  /** The secret's last four characters, to tell secrets apart. */
  secret_hint: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

/** The create and rotate_secret answer: the endpoint plus its secret, served this once. */
export const WebhookEndpointWithSecret = Obj({
  ...WebhookEndpoint.properties,
  /** `whsec_` + base64 key: the `key` of `client.beta.webhooks.unwrap`. */
  secret: Type.String(),
});

export const WebhookDelivery = Obj({
  type: Type.Literal('webhook_delivery'),
  id: Type.String(),
  endpoint_id: Type.String(),
  /** The event's id (the body's `id`); `webhook-id` is `message_id`. Both stable across attempts. */
  event_id: Type.String(),
  message_id: Type.String(),
  event_type: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  /** Null when done, and while an attempt is in flight. */
  next_attempt_at: Nullable(Type.String()),
  last_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  created_at: Type.String(),
  completed_at: Nullable(Type.String()),
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;
