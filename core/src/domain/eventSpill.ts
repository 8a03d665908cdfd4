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
 * session delete cascade removes (./sessionCascade.ts). A blob that cannot be read back serves
 * the event with its inline fields and `payload_unavailable: true`, never an error. Proved by
 * test/event-spill.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { ObjectStore } from '../ports/objectStore.js';
import type { EventDoc } from './collections.js';
import { objectKeySegment } from './files.js';

/** 500 KB: the spec's spill threshold, measured on the payload's JSON (UTF-8 bytes). */
export const SPILL_THRESHOLD_BYTES = 500 * 1000;
/** Top-level scalars kept beside the reference (strings up to this length). */
const KEPT_SCALAR_CHARS = 256;

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

/**
 * The payload to store for an event: itself when small, else a reference to its blob (written
 * here, before the caller appends). `key` is set when a blob was written.
 */
export async function spillPayload(
  objects: ObjectStore,
  tenant: string,
  sessionId: string,
  eventId: string,
  payload: Record<string, unknown>,
  threshold = SPILL_THRESHOLD_BYTES,
): Promise<{ stored: Record<string, unknown>; key?: string }> {
  const json = JSON.stringify(payload);
  // Most payloads are small: sized without copying them into a buffer.
  if (json.length * 3 <= threshold || Buffer.byteLength(json, 'utf8') <= threshold)
    return { stored: payload };
  const bytes = Buffer.from(json, 'utf8');
  const key = spillKey(tenant, sessionId, eventId);
  await objects.put(key, bytes, { contentType: 'application/json' });
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload))
    if (
      typeof v === 'number' ||
      typeof v === 'boolean' ||
      (typeof v === 'string' && v.length <= KEPT_SCALAR_CHARS)
    )
      kept[k] = v;
  return { stored: { ...kept, _spilled: { key, bytes: bytes.length } }, key };
}

/** Events with every spilled payload read back whole (others returned as they are). */
export async function hydrateEvents(objects: ObjectStore, docs: EventDoc[]): Promise<EventDoc[]> {
  return Promise.all(
    docs.map(async (d) => {
      const ref = spilledRef(d.payload);
      if (!ref) return d;
      const data = await objects.get(ref.key).catch(() => null);
      if (!data) {
        // The blob is gone (lost or deleted out of band): the event is still served, with the
        // fields kept inline and a marker, so one lost blob never breaks a session's reads.
        const { _spilled, ...kept } = d.payload;
        return { ...d, payload: { ...kept, payload_unavailable: true } };
      }
      return { ...d, payload: JSON.parse(Buffer.from(data).toString('utf8')) };
    }),
  );
}
