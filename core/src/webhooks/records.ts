/**
 * Stored shapes of outbound webhooks (collections in ../store/collections.ts): a tenant's
 * endpoints (secret sealed), the emitted events (the body every attempt sends, byte for byte)
 * and one delivery record per (event, endpoint), which holds the attempt count and the due time
 * of the next attempt so a restarted worker picks it up.
 */
import type { WebhookDisabledReason } from '@agentfleet/schemas';

export interface WebhookEndpointDoc {
  _id: string;
  tenant_id: string;
  url: string;
  /** Empty: every event type. */
  event_types: string[];
  description: string | null;
  /** `whsec_…`, sealed (SecretBox, purpose `webhook-endpoint-secret`). */
  secret_sealed: string;
  secret_hint: string;
  disabled: boolean;
  disabled_reason: WebhookDisabledReason | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookEventDoc {
  _id: string; // evt_…
  tenant_id: string;
  /** The Standard Webhooks message id (`webhook-id` header), stable for every attempt. */
  message_id: string;
  type: string;
  /** The exact JSON body every attempt of every delivery of this event sends. */
  body: string;
  created_at: string;
}

/** The endpoint id of the deployment-level endpoint (SVC_MANAGED_AGENTS_WEBHOOK_URL). */
export const DEPLOYMENT_ENDPOINT_ID = 'deployment';

export interface WebhookDeliveryDoc {
  _id: string; // whdl_…
  tenant_id: string;
  event_id: string;
  /** A tenant endpoint id, or DEPLOYMENT_ENDPOINT_ID. */
  endpoint_id: string;
  event_type: string;
  state: 'pending' | 'succeeded' | 'failed';
  /** Attempts started (claimed); at most WEBHOOK_DELIVERY.maxAttempts. */
  attempts: number;
  /** Epoch ms when the next attempt is due (pending only). */
  next_attempt_at: number;
  /** Epoch ms until which the current attempt's claimant owns it (0: unclaimed). */
  claimed_until: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}
