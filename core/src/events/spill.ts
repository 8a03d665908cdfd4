/**
 * Event spill (spec: "Events larger than 500 KB spill to the object store with an `_spilled`
 * reference"). An event whose serialised payload is over SPILL_THRESHOLD_BYTES is written whole
 * to the object store under the session's spill prefix, and the stored document keeps only
 * `{_spilled: {key, bytes}}` plus the payload's short top-level scalars (ids and flags that
 * queries read, e.g. `custom_tool_use_id`).
 *
 * Guarantees: the blob is written (and durable) before the event is appended, so a stored
 * reference never dangles; every read path (EventLog.range/all/hydrate: events list, SSE replay
 * and live delivery, GraphQL, the turn runner's history) serves the payload whole and never
 * shows `_spilled`; blobs of an append that failed are deleted by the append, and a blob left
 * by a crash between the put and the insert lies under the session's spill prefix, which the
 * session delete cascade removes (../sessions/cascade.ts). Proved by test/e2e/events/event-spill.test.ts.
 *
 * No event makes a read of the session's events fail (test/e2e/events/event-spill-limits.test.ts):
 * - at append a payload over MAX_EVENT_PAYLOAD_BYTES (32 MiB) is capped first (./cap.ts:
 *   its longest strings cut, each with a note, and `payload_truncated: true`);
 * - a reference is followed only to a blob under the event's own tenant and session spill
 *   prefix (eventSpillPrefix, from the document's tenant_id and session_id): any other key is
 *   never fetched;
 * - a blob outside that prefix, missing, unreadable or over the ceiling (its size read with
 *   `head`, so it is never loaded) serves the event with its inline fields and
 *   `payload_unavailable: true` and `payload_unavailable_reason` ('outside_session',
 *   'missing', 'too_large'), never an error and never `_spilled`;
 * - `servedPrefix` bounds a page: list reads (REST, GraphQL) serve the leading events whose
 *   spilled payloads total at most PAGE_PAYLOAD_BYTES (at least one event), and say has_more.
 */
import { randomBytes } from 'node:crypto';
import type { ObjectStore } from '../objects/port.js';
import type { EventDoc } from './records.js';
import { objectKeySegment } from '../files/files.js';
import { capPayload, jsonOf, keptScalars, MAX_EVENT_PAYLOAD_BYTES } from './cap.js';

/** 500 KB: the spec's spill threshold, measured on the payload's JSON (UTF-8 bytes). */
export const SPILL_THRESHOLD_BYTES = 500 * 1000;
/** Spilled payload bytes one page of a list serves at most (beyond its first event). */
export const PAGE_PAYLOAD_BYTES = 2 * MAX_EVENT_PAYLOAD_BYTES;

export interface SpilledRef {
  key: string;
  bytes: number;
}

export const eventSpillPrefix = (tenant: string, sessionId: string) =>
  `events/${objectKeySegment(tenant, 'tenant id')}/${objectKeySegment(sessionId, 'session id')}/`;
/** One blob per write attempt: a retried append never overwrites or deletes a stored event's blob. */
const spillKey = (tenant: string, sessionId: string, eventId: string) =>
  `${eventSpillPrefix(tenant, sessionId)}${objectKeySegment(eventId, 'event id')}-${randomBytes(4).toString('hex')}.json`;

export function spilledRef(payload: Record<string, unknown>): SpilledRef | null {
  const ref = payload._spilled as SpilledRef | undefined;
  return ref && typeof ref === 'object' && typeof ref.key === 'string' ? ref : null;
}

/** True when `key` is one blob directly under the spill prefix of the event's own session. */
function ownsKey(d: EventDoc, key: string): boolean {
  let prefix: string;
  try {
    prefix = eventSpillPrefix(d.tenant_id, d.session_id);
  } catch {
    return false;
  }
  const name = key.slice(prefix.length);
  return key.startsWith(prefix) && /^[^/]+\.json$/.test(name);
}

/**
 * The payload to store for an event: itself when small, else a reference to its blob (written
 * here, before the caller appends). A payload over MAX_EVENT_PAYLOAD_BYTES is capped first.
 * `key` is set when a blob was written.
 */
export async function spillPayload(
  objects: ObjectStore,
  tenant: string,
  sessionId: string,
  eventId: string,
  payload: Record<string, unknown>,
  threshold = SPILL_THRESHOLD_BYTES,
): Promise<{ stored: Record<string, unknown>; key?: string }> {
  let json = jsonOf(payload);
  // Most payloads are small: sized without copying them into a buffer.
  if (json !== null && json.length * 3 <= threshold) return { stored: payload };
  const bytes = json === null ? Infinity : Buffer.byteLength(json, 'utf8');
  if (bytes <= threshold) return { stored: payload };
  if (json === null || bytes > MAX_EVENT_PAYLOAD_BYTES) {
    ({ payload, json } = capPayload(payload));
    if (Buffer.byteLength(json, 'utf8') <= threshold) return { stored: payload };
  }
  const data = Buffer.from(json, 'utf8');
  const key = spillKey(tenant, sessionId, eventId);
  await objects.put(key, data, { contentType: 'application/json' });
  return { stored: { ...keptScalars(payload), _spilled: { key, bytes: data.length } }, key };
}

type Unavailable = 'outside_session' | 'missing' | 'too_large';
const unavailable = (d: EventDoc, reason: Unavailable): EventDoc => {
  const { _spilled, ...kept } = d.payload;
  return {
    ...d,
    payload: { ...kept, payload_unavailable: true, payload_unavailable_reason: reason },
  };
};

/** The size of the event's blob, or why it is not served. */
async function blobSize(objects: ObjectStore, d: EventDoc, ref: SpilledRef) {
  if (!ownsKey(d, ref.key)) return 'outside_session' as const;
  const info = await objects.head(ref.key).catch(() => null);
  if (!info) return 'missing' as const;
  return info.size > MAX_EVENT_PAYLOAD_BYTES ? ('too_large' as const) : info.size;
}

async function hydrateOne(objects: ObjectStore, d: EventDoc): Promise<EventDoc> {
  const ref = spilledRef(d.payload);
  if (!ref) return d;
  const size = await blobSize(objects, d, ref);
  if (typeof size === 'string') return unavailable(d, size);
  const data = await objects.get(ref.key).catch(() => null);
  // Lost (or replaced by something larger) since the head: still served, marked.
  if (!data) return unavailable(d, 'missing');
  if (data.length > MAX_EVENT_PAYLOAD_BYTES) return unavailable(d, 'too_large');
  try {
    return { ...d, payload: JSON.parse(Buffer.from(data).toString('utf8')) };
  } catch {
    return unavailable(d, 'missing');
  }
}

/** Events with every spilled payload read back whole (others returned as they are). */
export function hydrateEvents(objects: ObjectStore, docs: EventDoc[]): Promise<EventDoc[]> {
  return Promise.all(docs.map((d) => hydrateOne(objects, d)));
}

/**
 * How many leading `docs` one page serves: those whose served spilled payloads total at most
 * `budget` bytes, and always the first.
 */
export async function servedPrefix(
  objects: ObjectStore,
  docs: EventDoc[],
  budget = PAGE_PAYLOAD_BYTES,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < docs.length; i++) {
    const ref = spilledRef(docs[i]!.payload);
    if (!ref) continue;
    const size = await blobSize(objects, docs[i]!, ref);
    if (typeof size === 'number') total += size;
    if (total > budget && i > 0) return i;
  }
  return docs.length;
}
