export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Jittered exponential backoff ("full jitter"). */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  const cap = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(cap / 2 + Math.random() * (cap / 2));
}

let lastMs = 0;
let lastIso = '';
/** The current time as ISO 8601; formatted once per millisecond (appends stamp twice each). */
export const nowIso = (): string => {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
};

/**
 * Deepest allowed nesting of objects and arrays in JSON the API accepts (request bodies,
 * GraphQL inputs), and in stored documents a session or an update copies. Deeper values would
 * overflow recursive code (validators, structuredClone, BSON: MongoDB stops at 100).
 */
export const MAX_JSON_DEPTH = 64;
/**
 * Stored documents (written before MAX_JSON_DEPTH was enforced) deeper than this are refused
 * with a 400 naming them instead of being copied: room for the wrapping a body gets when it is
 * stored, and below MongoDB's nesting limit of 100.
 */
export const MAX_STORED_JSON_DEPTH = 96;

/**
 * Nesting depth of objects and arrays in a parsed value, computed iteratively and stopping once
 * it passes `max` (so the answer is at most max + 1). Scalars have depth 0.
 */
export function valueDepth(value: unknown, max = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > max) return deepest;
    }
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (child !== null && typeof child === 'object') stack.push([child, depth]);
  }
  return deepest;
}

/**
 * Freezes `v` and everything it holds, so a cached value cannot be changed by a caller (objects
 * already frozen are taken as frozen through).
 */
export function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** One POSIX shell word holding `v` exactly (single quotes; a quote inside becomes '\''). */
export const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
