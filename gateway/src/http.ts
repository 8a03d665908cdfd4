import type { FastifyRequest } from 'fastify';
import { BETA_VERSION, compileBody, compileQuery, type ErrorBody } from '@agentfleet/schemas';
import { ApiError, impliedErrorCode, type Principal } from '@agentfleet/core';
import type { TSchema, Static } from '@sinclair/typebox';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** The matched route's config, read once per request by the onRequest guard (requestGuards.ts). */
    routeCfg: (FastifyContextConfig & { url?: string }) | null;
  }
  interface FastifyContextConfig {
    /** Extension endpoint with no official client method: requires the beta header. */
    beta?: boolean;
    /** Unauthenticated (health, readiness). */
    public?: boolean;
    /** Only the deployment's operator API key. */
    operator?: boolean;
  }
}

export const tenantOf = (req: FastifyRequest) => req.principal.tenantId;

export function errorBody(
  type: string,
  message: string,
  requestId: string,
  details?: Record<string, unknown>,
): ErrorBody {
  // The SDK's typed errors: a code implied by the details (core/src/errors.ts) is added.
  const implied = details?.error_code === undefined ? impliedErrorCode(type, details) : undefined;
  const all = implied ? { ...details, error_code: implied } : details;
  // A memory path conflict also carries its two fields on the error object (SDK
  // BetaManagedAgentsMemoryPathConflictErrorObject), besides `details`.
  const lifted =
    typeof all?.conflicting_path === 'string'
      ? {
          conflicting_path: all.conflicting_path,
          conflicting_memory_id: String(all.conflicting_memory_id ?? ''),
        }
      : {};
  return {
    type: 'error',
    error: { type, message, ...lifted, ...(all ? { details: all } : {}) },
    request_id: requestId,
  };
}

/** Body and query validators compiled once per schema. */
export function bodyOf<S extends TSchema>(schema: S) {
  const v = compileBody(schema);
  return (req: FastifyRequest): Static<S> => {
    if (req.body === undefined || req.body === null)
      throw new ApiError('invalid_request', 'body: a JSON object is required');
    return v(req.body);
  };
}
export function queryOf<S extends TSchema>(schema: S) {
  const v = compileQuery(schema);
  return (req: FastifyRequest): Static<S> => v({ ...(req.query as object) });
}
export function optionalBody<S extends TSchema>(schema: S) {
  const v = compileBody(schema);
  return (req: FastifyRequest): Static<S> => v(req.body ?? {});
}

export function hasBeta(req: FastifyRequest): boolean {
  const values = [req.headers['anthropic-beta'], req.headers['vendor-beta']]
    .flat()
    .filter(Boolean) as string[];
  return values.some((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .includes(BETA_VERSION),
  );
}

/** Where parseQuery records the first malformed key of a query string (read by queryProblem). */
const QUERY_PROBLEM = Symbol('queryProblem');
/** Names that must never become object keys (prototype pollution, inherited lookups). */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** `name` or `name[sub]` (created_at[gte]) or `name[]` (the SDK's bracket arrays); nothing else. */
const KEY_SHAPE = /^([^[\]]+)(?:\[([^[\]]*)\])?$/;

/**
 * Query strings: repeated keys and `key[]` (the SDK's bracket arrays) become arrays under the
 * bare key; `created_at[gte]` style keys are kept as written. The result has a null prototype.
 * Reserved names (`__proto__`, `constructor`, `prototype`, also inside brackets), empty names
 * and other bracket forms (`a[b][c]`, `a]`, `a[b]c`) are not kept: the first one is recorded
 * for queryProblem, which the gateway turns into a 400 naming the key (the router calls this
 * parser, where throwing would not become a client error).
 */
export function parseQuery(qs: string): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  if (qs.length === 0) return out;
  for (const [rawKey, value] of new URLSearchParams(qs)) {
    const m = KEY_SHAPE.exec(rawKey);
    if (!m || RESERVED_KEYS.has(m[1]!) || (m[2] !== undefined && RESERVED_KEYS.has(m[2]))) {
      if (!(QUERY_PROBLEM in out)) {
        const why = !m
          ? 'is not a valid query parameter name (use name, name[] or name[sub])'
          : 'is a reserved name and not accepted';
        Object.defineProperty(out, QUERY_PROBLEM, {
          value: {
            key: rawKey,
            message: `query parameter ${JSON.stringify(rawKey.slice(0, 100))} ${why}`,
          },
          enumerable: false,
        });
      }
      continue;
    }
    const isArray = m[2] === '';
    const key = isArray ? m[1]! : rawKey;
    const cur = out[key];
    if (isArray)
      out[key] = Array.isArray(cur) ? [...cur, value] : cur === undefined ? [value] : [cur, value];
    else if (cur === undefined) out[key] = value;
    else out[key] = Array.isArray(cur) ? [...cur, value] : [cur, value];
  }
  return out;
}

/** The malformed query key parseQuery found, if any. */
export function queryProblem(query: unknown): { key: string; message: string } | undefined {
  return query && typeof query === 'object'
    ? (query as { [QUERY_PROBLEM]?: { key: string; message: string } })[QUERY_PROBLEM]
    : undefined;
}
