/**
 * HTTP for skill sources: GET of tenant-supplied https URLs under the platform's one egress
 * policy (core/src/egress/policy.ts), with the operator's SKILL_SOURCES_ALLOW_HOSTS (and
 * EGRESS_ALLOW_PRIVATE_HOSTS) as the only openings for private addresses.
 *
 * Guarantees (proved by test/e2e/skills/skill-sources.test.ts):
 * - only `https:` URLs are fetched: the source, every URL an index points at, and every
 *   redirect hop (at most 5); anything else is a 400 naming the field ("an http:// source is a
 *   400", "an index pointing at an http:// artifact…", "redirects are followed over https only…");
 * - a name resolving to a private, loopback or metadata address is refused before any
 *   connection, with a 400 naming SKILL_SOURCES_ALLOW_HOSTS, unless the host (`host` or
 *   `host:port`) is opened there ("a source resolving to 127.0.0.1 that is not opened…");
 * - upstream TLS trusts the system store plus EGRESS_CA_CERTS (core/src/egress/ca.ts), as the
 *   MCP proxy does;
 * - every answer is bounded: at most `maxBytes` bytes (read as they arrive, cut at the limit;
 *   "…an index over 1 MiB is refused") and `timeoutMs` for the whole exchange (not covered by a
 *   test: no timed assertions); failures are 400s naming the URL, never 5xx, and never the
 *   resolved address.
 */
import { upstreamTrust } from '../../egress/ca.js';
import { egressFetch, type HttpFetch } from '../../egress/dispatcher.js';
import { createEgressPolicy, egressRefusalIn, type PrivateHostRule } from '../../egress/policy.js';
import { ApiError, invalid } from '../../errors.js';

export const ALLOW_SETTING = 'SKILL_SOURCES_ALLOW_HOSTS';
const MAX_REDIRECTS = 5;

export interface SourceFetchOptions {
  /** EGRESS_ALLOW_PRIVATE_HOSTS plus SKILL_SOURCES_ALLOW_HOSTS. */
  allowHosts: ReadonlyArray<PrivateHostRule>;
  /** EGRESS_CA_CERTS (PEM file) or null. */
  caCertsFile: string | null;
  /** Per request, whole exchange. Default 20 s. */
  timeoutMs?: number;
}

export interface SourceAnswer {
  status: number;
  /** The final URL (after redirects). */
  url: string;
  contentType: string;
  bytes: Uint8Array;
}

/** Parses `raw` as an https URL, or throws a 400 naming `field`. */
export function httpsUrl(raw: string, field: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid(field, `'${raw.slice(0, 200)}' is not a URL`);
  }
  if (u.protocol !== 'https:')
    throw invalid(field, `skill sources must use https (got ${u.protocol.replace(/:$/, '')})`);
  if (u.username || u.password) throw invalid(field, 'credentials in the URL are not allowed');
  return u;
}

export class SourceFetcher {
  private client: Promise<HttpFetch & { close(): Promise<void> }> | null = null;
  private readonly policy;
  private readonly timeoutMs: number;

  constructor(private readonly opts: SourceFetchOptions) {
    this.policy = createEgressPolicy({ allowPrivateHosts: opts.allowHosts });
    this.timeoutMs = opts.timeoutMs ?? 20_000;
  }

  private fetcher() {
    this.client ??= upstreamTrust(this.opts.caCertsFile)
      .then((secureContext) => egressFetch(this.policy, { secureContext }))
      .catch((err) => {
        this.client = null;
        throw err;
      });
    return this.client;
  }

  /**
   * GET `url` (https only, redirects followed and re-checked). Non-2xx answers are returned
   * (status and no body), so index lookups can try the next location; transport failures and
   * refusals throw 400s naming `field`.
   */
  async get(url: URL, field: string, maxBytes: number): Promise<SourceAnswer> {
    // the reason names an operator file: said in the operator's log, not to the tenant
    const http = await this.fetcher().catch(() => {
      throw invalid(field, "the platform's upstream TLS trust (EGRESS_CA_CERTS) cannot be loaded");
    });
    const signal = AbortSignal.timeout(this.timeoutMs);
    let current = url;
    for (let hop = 0; ; hop++) {
      httpsUrl(current.href, field); // the first URL (e.g. an index entry's) and every hop
      const check = this.policy.checkLiteral(current.hostname, Number(current.port) || 443);
      if (check) throw refused(field, current);
      let res: Response;
      try {
        res = await http(current.toString(), {
          redirect: 'manual',
          signal,
          headers: { accept: 'application/json, text/markdown, application/octet-stream, */*' },
        });
      } catch (err) {
        if (egressRefusalIn(err)) throw refused(field, current);
        if (signal.aborted)
          throw invalid(field, `${current.origin}: no answer within ${this.timeoutMs} ms`);
        throw invalid(field, `${current.origin} could not be reached (${reasonOf(err)})`);
      }
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        await res.body?.cancel().catch(() => {});
        if (hop >= MAX_REDIRECTS) throw invalid(field, `${url.href}: too many redirects`);
        let next: URL;
        try {
          next = new URL(res.headers.get('location')!, current);
        } catch {
          throw invalid(field, `${current.href} redirects to an invalid location`);
        }
        current = httpsUrl(next.href, field);
        continue;
      }
      const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        return { status: res.status, url: current.href, contentType, bytes: new Uint8Array() };
      }
      const bytes = await readBounded(res, maxBytes, field, current, () => signal.aborted);
      return { status: res.status, url: current.href, contentType, bytes };
    }
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    if (c) await (await c.catch(() => null))?.close().catch(() => {});
  }
}

function refused(field: string, u: URL) {
  return invalid(
    field,
    `${u.hostname} is a private or reserved address; skill sources there must be opened by the operator with ${ALLOW_SETTING}`,
  );
}

function reasonOf(err: unknown): string {
  for (let e = err as any, d = 0; e && d < 5; e = e.cause, d++) {
    if (typeof e.code === 'string' && e.code !== 'UND_ERR') return e.code;
  }
  return (err as Error)?.message?.slice(0, 200) ?? 'fetch failed';
}

async function readBounded(
  res: Response,
  maxBytes: number,
  field: string,
  u: URL,
  timedOut: () => boolean,
): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length'));
  const tooLarge = () => invalid(field, `${u.href} is larger than ${maxBytes} bytes`);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!res.body) return new Uint8Array();
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (timedOut()) throw invalid(field, `${u.href}: the answer did not complete in time`);
    throw invalid(field, `${u.href}: reading the answer failed (${reasonOf(err)})`);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
