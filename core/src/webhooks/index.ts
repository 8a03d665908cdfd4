/** Outbound signed webhooks (Standard Webhooks): see ./webhooks.ts, ./delivery.ts, ./endpoints.ts. */
export {
  WebhookService,
  type WebhookEventType,
  type WebhookEmitOptions,
  type SweepResult,
} from './webhooks.js';
export { retryDelayMs, type AttemptOutcome } from './delivery.js';
export {
  checkEndpointUrl,
  hostOpened,
  messageIdOf,
  WebhookEndpointService,
  ENDPOINT_PREFIX,
} from './endpoints.js';
export { DEPLOYMENT_ENDPOINT_ID } from './records.js';
export type { WebhookDeliveryDoc, WebhookEndpointDoc, WebhookEventDoc } from './records.js';
export { emitSessionStatusWebhooks } from './hooks.js';
export type { LifecycleWebhooks } from './port.js';
