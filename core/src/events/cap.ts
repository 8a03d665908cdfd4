/**
 * The ceiling on one event's payload (core/src/events/spill.ts applies it at append): a
 * payload whose JSON is over MAX_EVENT_PAYLOAD_BYTES is stored capped, never whole, so no
 * event, however it was produced (a tool that printed hundreds of MiB, a runaway model), can
 * make a later read of the session's events fail.
 *
 * Guarantees (test/e2e/events/event-spill-limits.test.ts "capped at append"):
 * - the ceiling is the gateway's request-body limit (32 MiB), so nothing a client can send is
 *   ever cut; only events the platform produces can reach it;
 * - capping shortens the payload's longest strings to a common length, each ending with
 *   TRUNCATION_NOTE naming how many characters it had, and sets `payload_truncated: true` on
 *   the payload; the payload keeps its shape (types, ids, block structure);
 * - a payload that still does not fit (say millions of tiny blocks) keeps only its short
 *   top-level scalars, with `payload_truncated: true`;
 * - a payload too large even to serialise (over V8's string limit) is capped the same way.
 */

/** 32 MiB, the gateway's bodyLimit (gateway/src/app.ts): a client event is never capped. */
export const MAX_EVENT_PAYLOAD_BYTES = 32 * 1024 * 1024;
/** Top-level scalars kept by the last-resort cap and beside a spill reference. */
export const KEPT_SCALAR_CHARS = 256;
/** Shortest length strings are cut to before the last resort. */
const MIN_STRING_CHARS = 1024;

export const TRUNCATION_NOTE = (total: number) =>
  `\n[truncated by the platform: the event was over ${MAX_EVENT_PAYLOAD_BYTES} bytes; this text had ${total} characters]`;

/** The payload's short top-level scalars (ids and flags that queries read). */
export function keptScalars(payload: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload))
    if (
      typeof v === 'number' ||
      typeof v === 'boolean' ||
      (typeof v === 'string' && v.length <= KEPT_SCALAR_CHARS)
    )
      kept[k] = v;
  return kept;
}

/** A copy with every string over `max` characters cut there (on a code point) and noted. */
function cutStrings(v: unknown, max: number): unknown {
  if (typeof v === 'string') {
    if (v.length <= max) return v;
    let end = max;
    const c = v.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--; // never split a surrogate pair
    return v.slice(0, end) + TRUNCATION_NOTE(v.length);
  }
  if (Array.isArray(v)) return v.map((x) => cutStrings(x, max));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = cutStrings(x, max);
    return out;
  }
  return v;
}

function stringLengths(v: unknown, out: number[]): number[] {
  if (typeof v === 'string') out.push(v.length);
  else if (Array.isArray(v)) for (const x of v) stringLengths(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) stringLengths(x, out);
  return out;
}

/** The common length the longest strings are cut to so that all strings total `budget`. */
function commonCut(lengths: number[], budget: number): number {
  lengths.sort((a, b) => b - a);
  let rest = lengths.reduce((a, b) => a + b, 0);
  for (let k = 0; k < lengths.length; k++) {
    rest -= lengths[k]!; // strings after k stay whole, the first k+1 are cut
    const cut = Math.floor((budget - rest) / (k + 1));
    if (cut >= (lengths[k + 1] ?? 0)) return cut;
  }
  return 0;
}

/** The JSON of `v`, or null when it cannot even be serialised (over V8's string limit). */
export function jsonOf(v: unknown): string | null {
  try {
    return JSON.stringify(v);
  } catch (err) {
    if (err instanceof RangeError) return null;
    throw err;
  }
}

/** The payload capped under `ceiling` JSON bytes (see the module's guarantees). */
export function capPayload(
  payload: Record<string, unknown>,
  ceiling = MAX_EVENT_PAYLOAD_BYTES,
): { payload: Record<string, unknown>; json: string } {
  // UTF-8 takes at most 3 bytes per UTF-16 unit, and the structure around the strings needs
  // room: strings cut to total a quarter of the ceiling usually fit at the first try.
  const first = commonCut(stringLengths(payload, []), Math.floor(ceiling / 4));
  for (let max = first; max >= MIN_STRING_CHARS; max = Math.floor(max / 2)) {
    const capped = { ...(cutStrings(payload, max) as Record<string, unknown>) };
    capped.payload_truncated = true;
    const json = jsonOf(capped);
    if (json !== null && Buffer.byteLength(json, 'utf8') <= ceiling)
      return { payload: capped, json };
  }
  const last = { ...keptScalars(payload), payload_truncated: true };
  return { payload: last, json: JSON.stringify(last) };
}
