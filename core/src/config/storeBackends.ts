/**
 * STORE_BACKENDS (the fleet section, core/src/config/storage.ts): named MongoDB backends and
 * tenant placement, e.g.
 * {"default":"mongodb://a:27017/agentfleet","backends":{"eu":"mongodb://b:27017/agentfleet"},"tenants":{"tnt_acme":"eu"}}.
 * A tenant not listed lives on `default` (MONGODB_URL when `default` is omitted). Every problem
 * is pushed to `problems` (loadConfig lists them all); it reads no environment itself.
 */
import { Type, type Static } from '@sinclair/typebox';

export const StoreBackendsSchema = Type.Object({
  default: Type.Union([Type.String(), Type.Null()]),
  backends: Type.Record(Type.String(), Type.String()),
  tenants: Type.Record(Type.String(), Type.String()),
});
export type StoreBackends = Static<typeof StoreBackendsSchema>;

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
