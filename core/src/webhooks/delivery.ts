/**
 * One attempt of one webhook delivery: claim, sign, send, record.
 *
 * Guarantees (test/e2e/webhooks/webhooks.test.ts, test/e2e/webhooks/webhooks-restart.test.ts):
 * - At most one attempt of a delivery runs at a time, across replicas: the attempt is claimed
 *   by an atomic compare-and-swap on the delivery record (state pending, due, unclaimed) that
 *   also counts it; the outcome is written only by the claimant of that attempt number.
 * - Every attempt sends the event's recorded body byte for byte with the same `webhook-id`
 *   (message id); `webhook-timestamp` is the attempt's instant and `webhook-signature` is
 *   computed afresh by the `standardwebhooks` library with the endpoint's secret.
 * - 2xx: succeeded. 3xx: non-retryable (redirects are not followed): the delivery fails and a
 *   tenant endpoint is disabled with `disabled_reason` {type: 'redirect', status, delivery_id}.
 *   Another status, a connect error or a timeout uses the attempt: the next is due after a
 *   jittered exponential delay within 5–120 s (`retryDelayMs`), and after the third the
 *   delivery is failed with the last status or error recorded.
 * - A tenant endpoint is reached through the egress policy: a name resolving to a private
 *   address the operator did not open is refused before connecting; the delivery fails at once
 *   with the refusal as its error (no attempt can change a policy answer).
 * - The deployment endpoint (SVC_MANAGED_AGENTS_WEBHOOK_URL) is operator configuration: it is
 *   reached without the tenant egress policy, and a 3xx there fails the delivery (logged) but
 *   cannot disable the setting.
 * - Logs name the tenant, delivery, endpoint and outcome; never the secret or the URL.
 */
import { WEBHOOK_DELIVERY } from '@agentfleet/schemas';
import { Webhook } from 'standardwebhooks';
import type { Collections } from '../store/collections.js';
import type { HttpFetch } from '../egress/dispatcher.js';
import { egressRefusalIn } from '../egress/policy.js';
import type { Logger } from '../log.js';
import { nowIso } from '../util.js';
import { DEPLOYMENT_ENDPOINT_ID, type WebhookDeliveryDoc } from './records.js';
import { messageIdOf, type WebhookEndpointService } from './endpoints.js';

export interface DeliveryContext {
  c: Collections;
  endpoints: WebhookEndpointService;
  /** Tenant endpoints: through the egress policy. */
  tenantFetch: HttpFetch;
  /** The deployment endpoint (operator configuration): plain fetch. */
  operatorFetch: HttpFetch;
  deploymentEndpoint: { url: string; signingKey: string } | null;
  timeoutMs: number;
  log: Logger;
  random?: () => number;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'skipped';

/** Delay before attempt `failed + 1`: 5 s · 2^(failed−1), plus up to half again, capped at 120 s. */
export function retryDelayMs(failed: number, random: () => number = Math.random): number {
  const base = WEBHOOK_DELIVERY.minDelayMs * 2 ** Math.max(0, failed - 1);
  const jittered = base + random() * (base / 2);
  return Math.round(
    Math.min(WEBHOOK_DELIVERY.maxDelayMs, Math.max(WEBHOOK_DELIVERY.minDelayMs, jittered)),
  );
}

interface Target {
  url: string;
  secret: string;
  fetch: HttpFetch;
  tenantEndpoint: boolean;
}

async function targetOf(
  ctx: DeliveryContext,
  d: WebhookDeliveryDoc,
): Promise<Target | { error: string }> {
  if (d.endpoint_id === DEPLOYMENT_ENDPOINT_ID) {
    const dep = ctx.deploymentEndpoint;
    if (!dep) return { error: 'the deployment endpoint is no longer configured' };
    return {
      url: dep.url,
      secret: dep.signingKey,
      fetch: ctx.operatorFetch,
      tenantEndpoint: false,
    };
  }
  const ep = await ctx.c.webhookEndpoints.get(d.tenant_id, d.endpoint_id);
  if (!ep) return { error: 'the endpoint was deleted' };
  if (ep.disabled) return { error: 'the endpoint is disabled' };
  return {
    url: ep.url,
    secret: ctx.endpoints.openSecret(ep),
    fetch: ctx.tenantFetch,
    tenantEndpoint: true,
  };
}

/** A connect error or timeout, described without the URL. */
function describeError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError')
    return `no answer within ${timeoutMs} ms`;
  const cause = e?.cause;
  if (cause?.code) return `connection failed (${cause.code})`;
  return `connection failed (${cause?.message ?? e?.message ?? 'unknown error'})`.slice(0, 300);
}

/**
 * Claims and runs the due attempt of delivery `id` at instant `nowMs` (also the signature's
 * timestamp). `skipped`: nothing due (done, not yet due, or another replica's attempt).
 */
export async function attemptDelivery(
  ctx: DeliveryContext,
  tenant: string,
  id: string,
  nowMs: number,
): Promise<AttemptOutcome> {
  const d = await ctx.c.webhookDeliveries.findOneAndUpdate(
    tenant,
    {
      _id: id,
      state: 'pending',
      next_attempt_at: { $lte: nowMs },
      claimed_until: { $lte: nowMs },
    },
    {
      $inc: { attempts: 1 },
      $set: { claimed_until: nowMs + ctx.timeoutMs + 30_000, updated_at: nowIso() },
    },
    { returnDocument: 'after' },
  );
  if (!d) return 'skipped';
  const mine = { _id: id, attempts: d.attempts };
  const finish = async (
    state: 'succeeded' | 'failed',
    status: number | null,
    error: string | null,
  ): Promise<AttemptOutcome> => {
    const now = nowIso();
    await ctx.c.webhookDeliveries.updateOne(tenant, mine, {
      $set: {
        state,
        last_status: status,
        last_error: error,
        claimed_until: 0,
        updated_at: now,
        completed_at: now,
      },
    });
    const fields = { tenant_id: tenant, delivery_id: id, endpoint_id: d.endpoint_id };
    if (state === 'failed')
      ctx.log.warn('webhook delivery failed', { ...fields, attempts: d.attempts, status, error });
    else ctx.log.debug('webhook delivered', { ...fields, attempts: d.attempts, status });
    return state;
  };
  const retry = async (status: number | null, error: string): Promise<AttemptOutcome> => {
    if (d.attempts >= WEBHOOK_DELIVERY.maxAttempts) return finish('failed', status, error);
    const delay = retryDelayMs(d.attempts, ctx.random);
    await ctx.c.webhookDeliveries.updateOne(tenant, mine, {
      $set: {
        last_status: status,
        last_error: error,
        next_attempt_at: nowMs + delay,
        claimed_until: 0,
        updated_at: nowIso(),
      },
    });
    ctx.log.info('webhook attempt failed; retrying', {
      tenant_id: tenant,
      delivery_id: id,
      attempt: d.attempts,
      status,
      error,
      retry_in_ms: delay,
    });
    return 'retrying';
  };

  if (d.attempts > WEBHOOK_DELIVERY.maxAttempts)
    return finish('failed', d.last_status, d.last_error ?? 'attempt budget used');
  const ev = await ctx.c.webhookEvents.get(tenant, d.event_id);
  if (!ev) return finish('failed', null, 'the event record is missing');
  const target = await targetOf(ctx, d);
  if ('error' in target) return finish('failed', null, target.error);

  const messageId = messageIdOf(ev._id);
  const signature = new Webhook(target.secret).sign(messageId, new Date(nowMs), ev.body);
  let status: number;
  try {
    const res = await target.fetch(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agentfleet-webhooks/1',
        'webhook-id': messageId,
        'webhook-timestamp': String(Math.floor(nowMs / 1000)),
        'webhook-signature': signature,
      },
      body: ev.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(ctx.timeoutMs),
    });
    status = res.status;
    await res.body?.cancel().catch(() => {});
  } catch (err) {
    const refusal = egressRefusalIn(err);
    if (refusal) return finish('failed', null, refusal.message);
    return retry(null, describeError(err, ctx.timeoutMs));
  }
  if (status >= 200 && status < 300) return finish('succeeded', status, null);
  if (status >= 300 && status < 400) {
    const message = `the endpoint answered ${status} (a redirect); redirects are not followed and disable the endpoint`;
    if (target.tenantEndpoint)
      await ctx.c.webhookEndpoints.updateOne(
        tenant,
        { _id: d.endpoint_id },
        {
          $set: {
            disabled: true,
            disabled_reason: { type: 'redirect', message, status, delivery_id: id, at: nowIso() },
            updated_at: nowIso(),
          },
        },
      );
    return finish('failed', status, message);
  }
  return retry(status, `the endpoint answered ${status}`);
}
