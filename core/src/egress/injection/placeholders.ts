/**
 * `environment_variable` vault credentials (SDK 1.12 `BetaManagedAgentsEnvironmentVariable*`):
 * the sandbox sees only a placeholder, and the session's egress proxy puts the real value in
 * its place on the way out. Guarantees:
 * - the placeholder is `afv_ph_<32 hex>`, random, stored sealed with the credential at create
 *   (core/src/vaults/credentials.ts) and kept across updates: stable per credential, never
 *   derived from the secret. Every exec in the session's sandbox gets `$<secret_name>` set to
 *   it, read live per exec (./commandSecrets.ts withCredentialEnv);
 * - the proxy replaces the placeholder by the secret only on requests to hosts the
 *   credential's `networking` allows (`limited`: `allowed_hosts`, exact or `*.suffix` for any
 *   subdomain, not the suffix itself; `unrestricted`: any host the session's network policy and
 *   the egress policy already let through: a credential never opens a host or an address), and
 *   only where `injection_location` says: header values (`header`), the request body (`body`).
 *   A placeholder sent anywhere else leaves the proxy as the placeholder;
 * - bodies are buffered for substitution up to MAX_SUBSTITUTION_BODY_BYTES (8 MiB); a larger
 *   body passes unchanged (its placeholders stay placeholders). A body whose placeholder was
 *   replaced is sent with its new content-length; a compressed (content-encoding) body is not
 *   searched;
 * - the credential is read on every request, so a rotation (update secret_value) applies to
 *   the next request.
 * Proved by test/e2e/credentials/sandbox-credentials.test.ts ("environment_variable").
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { ResolvedCredential } from '../../vaults/vaults.js';
import { hostMatches } from '../proxy/policy.js';

export const MAX_SUBSTITUTION_BODY_BYTES = 8 * 1024 * 1024;

/** One placeholder the proxy replaces in a request, and where. */
export interface PlaceholderSubstitution {
  placeholder: string;
  value: string;
  header: boolean;
  body: boolean;
}

/** The placeholder of an environment_variable credential (sealed with it at create). */
export function placeholderOf(c: ResolvedCredential): string {
  if (c.secrets.placeholder) return c.secrets.placeholder;
  // cap_cli, or created before placeholders were stored: stable, from the credential id (not
  // the secret).
  return `afv_ph_${createHash('sha256').update(`placeholder:${c.credential_id}`).digest('hex').slice(0, 32)}`;
}

/** Whether an environment_variable credential's networking lets its secret go to `host`. */
export function envVarAllowsHost(c: ResolvedCredential, host: string): boolean {
  const n = c.auth.networking as { type: string; allowed_hosts?: string[] } | undefined;
  if (n?.type === 'unrestricted') return true;
  if (n?.type === 'limited') return (n.allowed_hosts ?? []).some((p) => hostMatches(p, host));
  return false;
}

/** The substitutions of the session's environment_variable credentials for `host`. */
export function substitutionsFor(
  creds: readonly ResolvedCredential[],
  host: string,
): PlaceholderSubstitution[] {
  const out: PlaceholderSubstitution[] = [];
  for (const c of creds) {
    if (c.type !== 'environment_variable' || !c.secrets.secret_value) continue;
    if (!envVarAllowsHost(c, host)) continue;
    const loc = (c.auth.injection_location ?? {}) as { header?: boolean; body?: boolean };
    if (!loc.header && !loc.body) continue;
    out.push({
      placeholder: placeholderOf(c),
      value: c.secrets.secret_value,
      header: !!loc.header,
      body: !!loc.body,
    });
  }
  return out;
}

/** The sandbox's view: `secret_name` → placeholder, for every environment_variable credential. */
export function placeholderEnv(creds: readonly ResolvedCredential[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const c of creds)
    if (c.type === 'environment_variable' && typeof c.auth.secret_name === 'string')
      env[c.auth.secret_name] ??= placeholderOf(c);
  return env;
}

/** Replaces the header-enabled placeholders in every header value (in place). */
export function substituteHeaders(
  headers: Record<string, string | string[]>,
  subs: readonly PlaceholderSubstitution[],
): void {
  const active = subs.filter((s) => s.header);
  if (!active.length) return;
  const swap = (v: string) =>
    active.reduce(
      (acc, s) => (acc.includes(s.placeholder) ? acc.split(s.placeholder).join(s.value) : acc),
      v,
    );
  for (const [k, v] of Object.entries(headers))
    headers[k] = Array.isArray(v) ? v.map(swap) : swap(v);
}

function replaceAll(buf: Buffer, from: Buffer, to: Buffer): Buffer {
  const parts: Buffer[] = [];
  let start = 0;
  for (let at = buf.indexOf(from); at >= 0; at = buf.indexOf(from, start)) {
    parts.push(buf.subarray(start, at), to);
    start = at + from.length;
  }
  if (!parts.length) return buf;
  parts.push(buf.subarray(start));
  return Buffer.concat(parts);
}

/** How a request body is sent: streamed as is, or buffered (and maybe substituted). */
export type PreparedBody =
  | { kind: 'stream' }
  | { kind: 'buffer'; body: Buffer; changed: boolean }
  | { kind: 'prefix'; chunks: Buffer[] };

/**
 * Reads the body for substitution when a body-enabled placeholder applies (and the body is not
 * content-encoded); over `max` bytes it stops reading and the body goes unchanged.
 */
export async function prepareBody(
  req: http.IncomingMessage,
  subs: readonly PlaceholderSubstitution[],
  max = MAX_SUBSTITUTION_BODY_BYTES,
): Promise<PreparedBody> {
  const active = subs.filter((s) => s.body);
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (!active.length || encoding !== 'identity') return { kind: 'stream' };
  const chunks: Buffer[] = [];
  let size = 0;
  const outcome = await new Promise<'end' | 'overflow'>((resolve, reject) => {
    const onData = (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size > max) {
        req.pause();
        cleanup();
        resolve('overflow');
      }
    };
    const onEnd = () => {
      cleanup();
      resolve('end');
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    // The sandbox went away before the body ended: nothing is sent upstream.
    const onClose = () => onError(new Error('the request body was cut off'));
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
  });
  if (outcome === 'overflow') return { kind: 'prefix', chunks };
  const original: Buffer = Buffer.concat(chunks);
  const body = active.reduce<Buffer>(
    (b, s) => replaceAll(b, Buffer.from(s.placeholder), Buffer.from(s.value)),
    original,
  );
  return { kind: 'buffer', body, changed: body !== original };
}

/** Sets the headers a prepared body needs (a substituted body's new length). */
export function bodyHeaders(headers: Record<string, string | string[]>, prepared: PreparedBody) {
  if (prepared.kind === 'buffer' && prepared.changed) {
    headers['content-length'] = String(prepared.body.length);
  }
}

/** Sends the request body upstream as prepared; `count` sees every byte sent. */
export function sendBody(
  req: Readable,
  up: Writable,
  prepared: PreparedBody,
  count: (bytes: number) => void,
): void {
  if (prepared.kind === 'buffer') {
    count(prepared.body.length);
    up.end(prepared.body);
    return;
  }
  if (prepared.kind === 'prefix')
    for (const c of prepared.chunks) {
      count(c.length);
      up.write(c);
    }
  req.on('data', (c: Buffer) => count(c.length));
  req.pipe(up);
}
