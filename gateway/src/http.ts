import type { FastifyRequest } from 'fastify';
import { BETA_VERSION, compileBody, compileQuery, type ErrorBody } from '@agentfleet/schemas';
import { ApiError, type Principal } from '@agentfleet/core';
import type { TSchema, Static } from '@sinclair/typebox';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
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

export function errorBody(type: string, message: string, requestId: string, details?: Record<string, unknown>): ErrorBody {
  return { type: 'error', error: { type, message, ...(details ? { details } : {}) }, request_id: requestId };
}

/** Body and query validators compiled once per schema. */
export function bodyOf<S extends TSchema>(schema: S) {
  const v = compileBody(schema);
  return (req: FastifyRequest): Static<S> => {
    if (req.body === undefined || req.body === null) throw new ApiError('invalid_request', 'body: a JSON object is required');
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
  const values = [req.headers['anthropic-beta'], req.headers['vendor-beta']].flat().filter(Boolean) as string[];
  return values.some((v) => v.split(',').map((s) => s.trim()).includes(BETA_VERSION));
}

/**
 * Query strings: repeated keys and `key[]` (the SDK's bracket arrays) become arrays under the
 * bare key; `created_at[gte]` style keys are kept as written.
 */
export function parseQuery(qs: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [rawKey, value] of new URLSearchParams(qs)) {
    const isArray = rawKey.endsWith('[]');
    const key = isArray ? rawKey.slice(0, -2) : rawKey;
    const cur = out[key];
    if (isArray) out[key] = Array.isArray(cur) ? [...cur, value] : cur === undefined ? [value] : [cur, value];
    else if (cur === undefined) out[key] = value;
    else out[key] = Array.isArray(cur) ? [...cur, value] : [cur, value];
  }
  return out;
}
