/**
 * Outbound webhooks, `platform.webhooks`: `emit` records an event and fans it out; the worker's
 * sender (workers/src/jobs/webhookSender.ts) delivers each one with `attempt`, from bus commands
 * and the due-time scan `sweep`.
 *
 * Guarantees (test/e2e/webhooks/webhooks.test.ts, test/e2e/webhooks/webhooks-restart.test.ts):
 * - `emit` resolves once the event and its deliveries are recorded (nothing is recorded when no
 *   endpoint takes the type); it never throws into the caller's flow (a store or bus failure is
 *   logged). With `key`, emitting the same key twice records one event (the id derives from
 *   it), so a redriven caller sends nothing twice.
 * - The body is the SDK's BetaWebhookEvent: `{id: 'evt_…', type: 'event', created_at, data:
 *   {type, id, organization_id, workspace_id, …the caller's other string fields}}`: the object's
 *   id, not the object; the receiver fetches it. `organization_id` is
 *   SVC_MANAGED_AGENTS_ORGANIZATION_ID, else the workspace (tenant) id.
 * - One delivery per (event, endpoint): the deployment endpoint (SVC_MANAGED_AGENTS_WEBHOOK_URL,
 *   every tenant's events) and each enabled endpoint of the tenant whose `event_types` is empty
 *   or names the type. Each gets a `webhook.delivery.requested` command (first attempt at once).
 * - Retries are due times in the store, not timers in memory: the scan (`sweep(nowMs)`, run by
 *   the worker every WEBHOOK_SCAN_MS, or called with an injected instant by tests) attempts
 *   every delivery due at `nowMs`, so a delivery survives restarts and a lost bus command.
 */
import { createHash } from 'node:crypto';
import type { WebhookEventName } from '@agentfleet/schemas';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import { readThrough } from '../store/readCache.js';
import type { HttpFetch } from '../egress/dispatcher.js';
import type { EgressPolicy } from '../egress/policy.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { CommandBus } from '../bus/port.js';
import { DuplicateKeyError } from '../store/port.js';
import { nowIso } from '../util.js';
import { attemptDelivery, type AttemptOutcome, type DeliveryContext } from './delivery.js';
import { DEPLOYMENT_ENDPOINT_ID, type WebhookDeliveryDoc } from './records.js';
import { messageIdOf, WebhookEndpointService } from './endpoints.js';

/** The contract's event type: one of WEBHOOK_EVENT_TYPES (an endpoint's filter names these). */
export type WebhookEventType = WebhookEventName;

export interface WebhookEmitOptions {
  /** Idempotency key: the same key (per tenant) records and sends one event. */
  key?: string;
}

export interface SweepResult {
  attempted: number;
  outcomes: Record<AttemptOutcome, number>;
}

export interface WebhookServiceDeps {
  c: Collections;
  bus: CommandBus;
  secrets: SecretBox;
  policy: EgressPolicy;
  tenantFetch: HttpFetch;
  operatorFetch?: HttpFetch;
  config: Config['webhooks'];
  log: Logger;
}

const SCAN_BATCH = 100;

export class WebhookService {
  readonly endpoints: WebhookEndpointService;
  private readonly delivery: DeliveryContext;

  constructor(private readonly deps: WebhookServiceDeps) {
    this.endpoints = new WebhookEndpointService(deps.c, deps.secrets, deps.policy);
    this.delivery = {
      c: deps.c,
      endpoints: this.endpoints,
      tenantFetch: deps.tenantFetch,
      operatorFetch: deps.operatorFetch ?? ((url, init) => fetch(url, init)),
      deploymentEndpoint: deps.config.deploymentEndpoint,
      timeoutMs: deps.config.timeoutMs,
      log: deps.log,
    };
  }

  /** Records the event and its deliveries and requests their first attempts. Never throws. */
  async emit(
    tenantId: string,
    type: WebhookEventType,
    data: { id: string; [k: string]: unknown },
    opts: WebhookEmitOptions = {},
  ): Promise<void> {
    try {
      await this.record(tenantId, type, data, opts);
    } catch (err) {
      this.deps.log.error('webhook emit failed', {
        tenant_id: tenantId,
        type,
        object_id: data.id,
        err: String(err),
      });
    }
  }

  private async record(
    tenant: string,
    type: string,
    data: { id: string; [k: string]: unknown },
    opts: WebhookEmitOptions,
  ): Promise<void> {
    const targets: string[] = [];
    if (this.deps.config.deploymentEndpoint) targets.push(DEPLOYMENT_ENDPOINT_ID);
    // Through the platform's endpoint cache (../store/readCache.ts QueryReadCache).
    const endpoints = this.deps.c.webhookEndpoints;
    const enabled = await readThrough(endpoints, tenant, 'enabled', () =>
      endpoints.find(tenant, { disabled: false }),
    );
    for (const ep of enabled ?? [])
      if (!ep.event_types.length || ep.event_types.includes(type)) targets.push(ep._id);
    if (!targets.length) return; // nobody listens: nothing to record
    const eventId = opts.key
      ? `evt_${createHash('sha256').update(`${tenant}\n${opts.key}`).digest('hex').slice(0, 26)}`
      : newId('evt_');
    const createdAt = nowIso();
    const extra: Record<string, string> = {};
    for (const [k, v] of Object.entries(data)) if (typeof v === 'string') extra[k] = v;
    const body = JSON.stringify({
      id: eventId,
      type: 'event',
      created_at: createdAt,
      data: {
        ...extra,
        type,
        id: data.id,
        organization_id: this.deps.config.organizationId ?? tenant,
        workspace_id: tenant,
      },
    });
    try {
      await this.deps.c.webhookEvents.insert(tenant, {
        _id: eventId,
        message_id: messageIdOf(eventId),
        type,
        body,
        created_at: createdAt,
      });
    } catch (err) {
      if (err instanceof DuplicateKeyError) return; // emitted before under this key
      throw err;
    }
    for (const endpointId of targets) {
      const d: Omit<WebhookDeliveryDoc, 'tenant_id'> = {
        _id: newId('whdl_'),
        event_id: eventId,
        endpoint_id: endpointId,
        event_type: type,
        state: 'pending',
        attempts: 0,
        next_attempt_at: Date.now(),
        claimed_until: 0,
        last_status: null,
        last_error: null,
        created_at: createdAt,
        updated_at: createdAt,
        completed_at: null,
      };
      await this.deps.c.webhookDeliveries.insert(tenant, d);
      // A lost command is harmless: the due-time scan finds the delivery.
      await this.deps.bus
        .publish('webhook.delivery.requested', { tenant_id: tenant, delivery_id: d._id })
        .catch((err) =>
          this.deps.log.warn('webhook delivery command not published; the scan will send it', {
            tenant_id: tenant,
            delivery_id: d._id,
            err: String(err),
          }),
        );
    }
  }

  /** Runs the due attempt of one delivery at `nowMs` (the bus handler uses the wall clock). */
  attempt(tenant: string, deliveryId: string, nowMs = Date.now()): Promise<AttemptOutcome> {
    return attemptDelivery(this.delivery, tenant, deliveryId, nowMs);
  }

  /**
   * The due-time scan: attempts every delivery (of every tenant) due at `nowMs`, up to a batch.
   * The worker's timer calls it with the wall clock; tests inject an instant instead of sleeping.
   */
  async sweep(nowMs = Date.now()): Promise<SweepResult> {
    const due = await this.deps.c.webhookDeliveries.scanAll(
      { state: 'pending', next_attempt_at: { $lte: nowMs }, claimed_until: { $lte: nowMs } },
      { sort: { next_attempt_at: 1 }, limit: SCAN_BATCH },
    );
    const outcomes: Record<AttemptOutcome, number> = {
      succeeded: 0,
      retrying: 0,
      failed: 0,
      skipped: 0,
    };
    const results = await Promise.allSettled(
      due.map((d) => this.attempt(d.tenant_id, d._id, nowMs)),
    );
    for (const r of results) {
      if (r.status === 'fulfilled') outcomes[r.value]++;
      else this.deps.log.error('webhook attempt failed to run', { err: String(r.reason) });
    }
    return { attempted: due.length, outcomes };
  }
}
