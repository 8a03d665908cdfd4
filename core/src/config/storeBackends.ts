/**
 * STORE_BACKENDS parsing for core/src/config/config.ts (moved out to keep config.ts under 500 lines):
 * every problem is pushed to `problems` (config.ts prints them all, then exits 1). It reads no
 * environment itself: config.ts passes the raw value.
 */
import type { StoreBackends } from './config.js';

export function parseStoreBackends(raw: string, problems: string[]): StoreBackends | null {
  let v: any;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    problems.push(`STORE_BACKENDS is not valid JSON: ${(err as Error).message}`);
    return null;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    problems.push('STORE_BACKENDS must be a JSON object');
    return null;
  }
  for (const k of Object.keys(v))
    if (!['default', 'backends', 'tenants'].includes(k))
      problems.push(`STORE_BACKENDS.${k}: unknown field`);
  const isUrl = (u: unknown) => typeof u === 'string' && /^mongodb(\+srv)?:\/\//.test(u);
  if (v.default !== undefined && !isUrl(v.default))
    problems.push('STORE_BACKENDS.default: must be a mongodb:// URL');
  const backends = v.backends ?? {};
  if (typeof backends !== 'object' || Array.isArray(backends))
    problems.push('STORE_BACKENDS.backends: must be an object of name → mongodb:// URL');
  else
    for (const [n, u] of Object.entries(backends))
      if (!isUrl(u)) problems.push(`STORE_BACKENDS.backends.${n}: must be a mongodb:// URL`);
  const tenants = v.tenants ?? {};
  if (typeof tenants !== 'object' || Array.isArray(tenants))
    problems.push('STORE_BACKENDS.tenants: must be an object of tenant id → backend name');
  else
    for (const [t, b] of Object.entries(tenants))
      if (typeof b !== 'string' || !(b in backends))
        problems.push(`STORE_BACKENDS.tenants.${t}: names no backend in STORE_BACKENDS.backends`);
  return { default: v.default ?? null, backends, tenants };
}
