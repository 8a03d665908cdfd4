/**
 * The webhooks port as the services that perform a change need it (platform.webhooks, wired
 * by server/src/platform.ts). Each service emits its object's lifecycle type once the change is
 * durable and only when the change happened (a refused or no-op call emits nothing); `emit`
 * never throws. Every type is delivered and unwrapped in test/e2e/webhooks/webhooks-types.test.ts.
 */
import type { WebhookEventName } from '@agentfleet/schemas';

export interface LifecycleWebhooks {
  emit(
    tenantId: string,
    type: WebhookEventName,
    data: { id: string; [k: string]: unknown },
    opts?: { key?: string },
  ): Promise<void>;
}
