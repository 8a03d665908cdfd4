/**
 * Inbound provider webhooks (`/v1/svc/integrations/{github/webhook, linear/webhook,
 * slack/events}`): no API key, the provider's signature is the authentication.
 *
 * (A body nested deeper than MAX_JSON_DEPTH is a 400 at the edge, gateway/src/routes/integrations.ts.)
 * Order, each step refusing before the next runs (test/e2e/integrations/integrations-ingest.test.ts):
 * 1. the client address's budget (INTEGRATIONS_WEBHOOKS_PER_ADDRESS_PER_MINUTE) → 429, before
 *    any verification work;
 * 2. the signature over the raw body with the integration's signing secret, in constant time,
 *    and the provider's timestamp window → 401 (an unconfigured integration → 404);
 * 3. the body is JSON → 400;
 * 4. a challenge (Slack url_verification) is answered as the provider asks;
 * 5. the account's install (its tenant) → none: 200 `ignored`;
 * 6. the delivery id, de-duplicated for DELIVERY_TTL_MS → a repeat: 200 `duplicate`;
 * 7. the tenant's budget (INTEGRATIONS_WEBHOOKS_PER_TENANT_PER_MINUTE) → 429, and the delivery
 *    id is forgotten so the provider's redelivery is handled (also when publishing fails);
 * 8. the normalized event is published on the bus and answered 202 at once; the session is
 *    started or continued by the worker (./conversations.ts).
 * Bad input is never a 5xx; nothing of the body or a secret is logged.
 */
import type { ErrorType } from '@agentfleet/schemas';
import type { CommandBus } from '../bus/port.js';
import { ApiError } from '../errors.js';
import type { RateLimiter } from '../coordination/port.js';
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import type { Headers, IntegrationId } from './port.js';
import { routeId } from './records.js';
import type { IntegrationService } from './service.js';

export const DELIVERY_TTL_MS = 24 * 3600_000;

export interface IngestLimits {
  perAddressPerMinute: number;
  perTenantPerMinute: number;
}

export interface IngestDeps {
  c: Collections;
  integrations: IntegrationService;
  bus: Pick<CommandBus, 'publish'>;
  rateLimiter: RateLimiter;
  limits: IngestLimits;
  log: Logger;
  now?: () => number;
}

/** A 2xx answer, or a refusal the edge renders in the API's error shape (with Retry-After). */
export type IngestAnswer =
  { status: number; body: Record<string, unknown> } | { error: ApiError; retryAfter?: number };

const refuse = (
  type: ErrorType,
  message: string,
  field?: string,
  retryAfter?: number,
): IngestAnswer => ({
  error: new ApiError(type, message, field ? { field } : undefined),
  ...(retryAfter ? { retryAfter } : {}),
});

export class WebhookIngest {
  private readonly now: () => number;
  /** When expired delivery ids were last swept (at most once a minute, not per request). */
  private sweptAt = 0;
  constructor(private readonly d: IngestDeps) {
    this.now = d.now ?? Date.now;
  }

  /** One token of `key`'s per-minute budget, or the 429 saying whose budget is spent. */
  private async overBudget(
    key: string,
    limit: number,
    whose: string,
  ): Promise<IngestAnswer | null> {
    const rl = await this.d.rateLimiter.consume(key, limit, 60_000);
    if (rl.allowed) return null;
    return refuse(
      'rate_limited',
      `more than ${rl.limit} webhook ${whose}`,
      undefined,
      Math.max(1, rl.resetAt - Math.floor(this.now() / 1000)),
    );
  }

  /** Records a delivery id; false when it was seen already. */
  private async firstDelivery(id: string): Promise<boolean> {
    if (this.now() - this.sweptAt > 60_000) {
      this.sweptAt = this.now();
      await this.d.c.integrationDeliveries.deleteMany({ expires_at: { $lt: this.now() } });
    }
    try {
      await this.d.c.integrationDeliveries.insertOne({
        _id: id,
        expires_at: this.now() + DELIVERY_TTL_MS,
      });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async handle(
    integration: IntegrationId,
    headers: Headers,
    raw: Buffer,
    address: string,
  ): Promise<IngestAnswer> {
    const byAddress = await this.overBudget(
      `igw:addr:${address}`,
      this.d.limits.perAddressPerMinute,
      'requests per minute from this address',
    );
    if (byAddress) return byAddress;
    const p = this.d.integrations.provider(integration);
    const missing = p.missingSettings();
    if (missing.length)
      return refuse('not_found', `integration ${integration} is not configured here`);
    const verified = p.verify(headers, raw);
    if (!verified.ok) return refuse('unauthorized', `signature: ${verified.reason}`, 'signature');
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return refuse('invalid_request', 'body: is not JSON', 'body');
    }
    // The adapter parses for the install's identity; tokens are never needed to parse.
    const parse = (externalId: string, data: Record<string, string>) =>
      p.parse(headers, body, {
        external_id: externalId,
        access_token: null,
        refresh_token: null,
        data,
      });
    const externalId = p.externalIdOf(body);
    const route = externalId
      ? await this.d.c.integrationRoutes.findOne({ _id: routeId(integration, externalId) })
      : null;
    const install = route
      ? await this.d.c.integrationInstalls.get(route.tenant_id, route.install_id)
      : null;
    if (externalId === null || !route || !install) {
      const parsed = parse(externalId ?? '', {});
      if (parsed.kind === 'challenge') return { status: 200, body: parsed.response };
      const reason = externalId === null ? 'no account in the event' : 'not installed here';
      return { status: 200, body: { status: 'ignored', reason } };
    }
    const deliveryId = p.deliveryId(headers, body);
    const seenId = deliveryId ? `${integration}:${deliveryId.slice(0, 200)}` : null;
    if (seenId && !(await this.firstDelivery(seenId)))
      return { status: 200, body: { status: 'duplicate', delivery_id: deliveryId } };
    // From here a refusal or a failure forgets the delivery id: the provider's redelivery is
    // then handled, not taken for a duplicate.
    const forget = async () => {
      if (seenId) await this.d.c.integrationDeliveries.deleteOne({ _id: seenId });
    };
    try {
      const byTenant = await this.overBudget(
        `igw:tenant:${route.tenant_id}`,
        this.d.limits.perTenantPerMinute,
        "events per minute for this install's tenant",
      );
      if (byTenant) {
        await forget();
        return byTenant;
      }
      const parsed = parse(externalId, install.data);
      if (parsed.kind === 'challenge') return { status: 200, body: parsed.response };
      if (parsed.kind === 'ignored')
        return { status: 200, body: { status: 'ignored', reason: parsed.reason } };
      if (parsed.kind === 'uninstalled') {
        await this.d.integrations.forget(route.tenant_id, install);
        return { status: 200, body: { status: 'uninstalled' } };
      }
      await this.d.bus.publish(
        'integration.event.received',
        {
          tenant_id: route.tenant_id,
          install_id: install._id,
          delivery_id: deliveryId ?? `${integration}:${this.now()}:${Math.random()}`,
          thread_key: `${install._id}:${parsed.thread.key}`,
          event: parsed as unknown as Record<string, unknown>,
        },
        deliveryId ? { id: `${integration}:${deliveryId}` } : undefined,
      );
      return { status: 202, body: { status: 'accepted' } };
    } catch (err) {
      await forget().catch(() => {});
      throw err;
    }
  }
}
