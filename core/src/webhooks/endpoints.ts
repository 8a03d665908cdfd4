/**
 * A tenant's webhook endpoints (/v1/svc/webhook_endpoints): create, list, retrieve, update,
 * delete, rotate_secret, and the deliveries of one endpoint.
 *
 * Guarantees (test/e2e/webhooks/webhooks-endpoints.test.ts):
 * - `url` is https, or http only for a host the operator opened with EGRESS_ALLOW_PRIVATE_HOSTS;
 *   a literal private address that is not opened, credentials in the URL or a fragment are a
 *   400 naming `url`. Names are checked again when each attempt connects (./delivery.ts).
 * - `event_types` names only types the platform emits (WEBHOOK_EVENT_TYPES); another is a 400
 *   naming `event_types[i]`. Empty or absent: every type.
 * - The secret (`whsec_` + 24 random bytes, base64) is generated here, served only by create
 *   and rotate_secret, sealed at rest (SecretBox) and never logged; reads show `secret_hint`.
 * - Another tenant's endpoint id is a 404 (every query is tenant-scoped).
 * - `disabled: false` re-enables an endpoint a 3xx disabled, clearing `disabled_reason`.
 */
import { randomBytes } from 'node:crypto';
import {
  WEBHOOK_EVENT_TYPES,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointCreate,
  type WebhookEndpointListQuery,
  type WebhookEndpointUpdate,
} from '@agentfleet/schemas';
import type { SecretBox } from '../crypto.js';
import { last4 } from '../crypto.js';
import { invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import { pageById, type Page } from '../api/pagination.js';
import { canonicalAddress } from '../egress/addresses.js';
import { ALLOW_PRIVATE_SETTING, normalizeHost, type EgressPolicy } from '../egress/policy.js';
import { nowIso } from '../util.js';
import type { WebhookDeliveryDoc, WebhookEndpointDoc } from './records.js';

export const ENDPOINT_PREFIX = 'whep_';
export const SECRET_PURPOSE = 'webhook-endpoint-secret';
const KNOWN_TYPES: ReadonlySet<string> = new Set(WEBHOOK_EVENT_TYPES);

export const newEndpointSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** True when EGRESS_ALLOW_PRIVATE_HOSTS opens `host:port` (by name, or by address for IPs). */
export function hostOpened(policy: EgressPolicy, rawHost: string, port: number): boolean {
  const host = normalizeHost(rawHost);
  const canonical = canonicalAddress(host);
  return policy.allowPrivateHosts.some(
    (r) =>
      (r.port === null || r.port === port) &&
      (r.host === host || (canonical !== null && canonicalAddress(r.host) === canonical)),
  );
}

/** The endpoint URL, normalised, or a 400 naming `url`. */
export function checkEndpointUrl(policy: EgressPolicy, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid('url', 'must be an absolute https URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw invalid('url', 'must be an https URL');
  if (u.username || u.password) throw invalid('url', 'must not carry credentials');
  if (u.hash) throw invalid('url', 'must not have a fragment');
  const port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
  const opened = hostOpened(policy, u.hostname, port);
  if (u.protocol === 'http:' && !opened)
    throw invalid(
      'url',
      `must be https (plain http only for hosts the operator opened with ${ALLOW_PRIVATE_SETTING})`,
    );
  if (policy.checkLiteral(u.hostname, port))
    throw invalid(
      'url',
      `is a private or reserved address; only hosts the operator opened with ${ALLOW_PRIVATE_SETTING} are allowed`,
    );
  return u.toString();
}

function checkEventTypes(types: string[] | null | undefined): string[] {
  const out: string[] = [];
  (types ?? []).forEach((t, i) => {
    if (!KNOWN_TYPES.has(t))
      throw invalid(
        `event_types[${i}]`,
        `unknown event type '${t}'; one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      );
    if (!out.includes(t)) out.push(t);
  });
  return out;
}

export function renderEndpoint(d: WebhookEndpointDoc): WebhookEndpoint {
  return {
    type: 'webhook_endpoint',
    id: d._id,
    url: d.url,
    event_types: d.event_types,
    description: d.description,
    disabled: d.disabled,
    disabled_reason: d.disabled_reason,
    secret_hint: d.secret_hint,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

/**
 * `next_attempt_at` is when the next attempt is due: null once the delivery is done, and null
 * while an attempt is in flight (claimed), whose outcome decides it. A claim that outlived its
 * claimant (a crashed sender) shows the old due time again: the scan takes it up.
 */
export function renderDelivery(
  d: WebhookDeliveryDoc,
  messageId: string,
  nowMs = Date.now(),
): WebhookDelivery {
  const waiting = d.state === 'pending' && d.claimed_until <= nowMs;
  return {
    type: 'webhook_delivery',
    id: d._id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    message_id: messageId,
    event_type: d.event_type,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: waiting ? new Date(d.next_attempt_at).toISOString() : null,
    last_status: d.last_status,
    last_error: d.last_error,
    created_at: d.created_at,
    completed_at: d.completed_at,
  };
}

/** The message id (`webhook-id`) of an event id: the same ULID under `msg_`. */
export const messageIdOf = (eventId: string) => `msg_${eventId.replace(/^evt_/, '')}`;

export class WebhookEndpointService {
  constructor(
    private readonly c: Collections,
    private readonly secrets: SecretBox,
    private readonly policy: EgressPolicy,
  ) {}

  private async doc(tenant: string, id: string): Promise<WebhookEndpointDoc> {
    const d = await this.c.webhookEndpoints.get(tenant, id);
    if (!d) throw notFound('webhook_endpoint', id);
    return d;
  }

  async create(
    tenant: string,
    b: WebhookEndpointCreate,
  ): Promise<WebhookEndpoint & { secret: string }> {
    const url = checkEndpointUrl(this.policy, b.url);
    const event_types = checkEventTypes(b.event_types);
    const secret = newEndpointSecret();
    const now = nowIso();
    const d: WebhookEndpointDoc = {
      _id: newId(ENDPOINT_PREFIX),
      tenant_id: tenant,
      url,
      event_types,
      description: b.description ?? null,
      secret_sealed: this.secrets.seal(secret, SECRET_PURPOSE),
      secret_hint: last4(secret),
      disabled: false,
      disabled_reason: null,
      created_at: now,
      updated_at: now,
    };
    await this.c.webhookEndpoints.insert(tenant, d);
    return { ...renderEndpoint(d), secret };
  }

  async list(tenant: string, q: WebhookEndpointListQuery): Promise<Page<WebhookEndpoint>> {
    const page = await pageById(this.c.webhookEndpoints, tenant, {}, q);
    return { ...page, data: page.data.map(renderEndpoint) };
  }

  async get(tenant: string, id: string): Promise<WebhookEndpoint> {
    return renderEndpoint(await this.doc(tenant, id));
  }

  async update(tenant: string, id: string, b: WebhookEndpointUpdate): Promise<WebhookEndpoint> {
    await this.doc(tenant, id);
    const set: Record<string, unknown> = { updated_at: nowIso() };
    if (b.url !== undefined) set.url = checkEndpointUrl(this.policy, b.url);
    if (b.event_types !== undefined) set.event_types = checkEventTypes(b.event_types);
    if (b.description !== undefined) set.description = b.description;
    if (b.disabled === false) Object.assign(set, { disabled: false, disabled_reason: null });
    if (b.disabled === true)
      Object.assign(set, {
        disabled: true,
        disabled_reason: {
          type: 'manual',
          message: 'disabled by an update',
          status: null,
          delivery_id: null,
          at: set.updated_at,
        },
      });
    const after = await this.c.webhookEndpoints.findOneAndUpdate(
      tenant,
      { _id: id },
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('webhook_endpoint', id);
    return renderEndpoint(after);
  }

  async remove(
    tenant: string,
    id: string,
  ): Promise<{ id: string; type: 'webhook_endpoint_deleted' }> {
    await this.doc(tenant, id);
    await this.c.webhookEndpoints.deleteOne(tenant, { _id: id });
    return { id, type: 'webhook_endpoint_deleted' };
  }

  /** A new secret, served this once; the old one signs nothing from now on. */
  async rotateSecret(tenant: string, id: string): Promise<WebhookEndpoint & { secret: string }> {
    await this.doc(tenant, id);
    const secret = newEndpointSecret();
    const after = await this.c.webhookEndpoints.findOneAndUpdate(
      tenant,
      { _id: id },
      {
        $set: {
          secret_sealed: this.secrets.seal(secret, SECRET_PURPOSE),
          secret_hint: last4(secret),
          updated_at: nowIso(),
        },
      },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('webhook_endpoint', id);
    return { ...renderEndpoint(after), secret };
  }

  async deliveries(
    tenant: string,
    id: string,
    q: WebhookEndpointListQuery,
  ): Promise<Page<WebhookDelivery>> {
    await this.doc(tenant, id);
    const page = await pageById(this.c.webhookDeliveries, tenant, { endpoint_id: id }, q);
    return {
      ...page,
      data: page.data.map((d) => renderDelivery(d, messageIdOf(d.event_id))),
    };
  }

  /** The endpoint's secret, opened for signing (never served, never logged). */
  openSecret(d: WebhookEndpointDoc): string {
    return this.secrets.open(d.secret_sealed, SECRET_PURPOSE);
  }
}
