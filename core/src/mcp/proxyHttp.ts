/**
 * The MCP proxy's HTTP pieces (./proxy.ts): which caller headers go upstream, which upstream
 * headers come back, and error answers in the platform's error shape. Guarantees:
 * - upstream never sees the caller's authorization, cookie, host, x-api-key, the platform's own
 *   `anthropic-*`/`vendor-*` headers, hop-by-hop headers (and those `connection` names),
 *   content-length or accept-encoding (the HTTP client sets those itself);
 * - the caller never sees hop-by-hop headers, set-cookie, content-encoding/content-length of a
 *   body the client already decoded, nor any header whose value carries the injected bearer.
 * Proved by test/e2e/mcp/mcp-proxy.test.ts.
 */

import { HOP_BY_HOP } from '../egress/proxy/helpers.js';

const NEVER_UPSTREAM = new Set([
  'authorization',
  'cookie',
  'host',
  'x-api-key',
  'content-length',
  'accept-encoding',
  'expect',
]);
const NEVER_DOWNSTREAM = new Set(['set-cookie', 'content-encoding', 'content-length']);

const connectionNamed = (value: string | undefined | null) =>
  new Set(
    (value ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );

/** The caller's headers as sent upstream (without any credential of the caller's). */
export function upstreamHeaders(caller: Record<string, string>): Record<string, string> {
  const named = connectionNamed(
    Object.entries(caller).find(([k]) => k.toLowerCase() === 'connection')?.[1],
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(caller)) {
    const name = k.toLowerCase();
    if (HOP_BY_HOP.has(name) || NEVER_UPSTREAM.has(name) || named.has(name)) continue;
    if (name.startsWith('anthropic-') || name.startsWith('vendor-')) continue;
    if (typeof v !== 'string') continue;
    out[name] = v;
  }
  return out;
}

/** The upstream answer's headers as the caller gets them (`secrets` never among the values). */
export function downstreamHeaders(h: Headers, secrets: string[]): Headers {
  const named = connectionNamed(h.get('connection'));
  const out = new Headers();
  h.forEach((value, key) => {
    const name = key.toLowerCase();
    if (HOP_BY_HOP.has(name) || NEVER_DOWNSTREAM.has(name) || named.has(name)) return;
    if (secrets.some((s) => s && value.includes(s))) return;
    out.append(name, value);
  });
  return out;
}

/** An error answer in the platform's shape (`{type: 'error', error: {type, message, details}}`). */
export function errorResponse(
  status: number,
  type: string,
  message: string,
  details?: Record<string, unknown>,
  requestId?: string,
): Response {
  return new Response(
    JSON.stringify({
      type: 'error',
      error: { type, message, ...(details ? { details } : {}) },
      ...(requestId ? { request_id: requestId } : {}),
    }),
    { status, headers: { 'content-type': 'application/json' } },
  );
}
