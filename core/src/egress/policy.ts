/**
 * The one egress policy for every request the platform makes on a tenant's behalf: sandbox
 * traffic through the session proxy (core/src/egress/proxy/proxy.ts), web_fetch, custom http tools
 * (sent from the sandbox, so through that proxy), and server-side calls to tenant-supplied
 * URLs (model card base_url of tenants other than the operator's, through egressDispatcher in
 * ./dispatcher.ts). MCP servers, webhooks and skill sources call the same `resolve`.
 *
 * Guarantees (tested in core/test/egress.test.ts, core/test/proxy.*.test.ts,
 * core/test/tools.web.test.ts and test/e2e/models/model-cards-egress.test.ts):
 * - A destination is resolved once; EVERY address of the answer is checked; the caller
 *   connects to the returned, checked address (no second lookup, so no DNS rebinding).
 * - A non-public address (see ./addresses.ts) is refused with EgressRefusedError, whatever a
 *   tenant's allowlist says, unless the operator opened it with EGRESS_ALLOW_PRIVATE_HOSTS:
 *   an entry `host` or `host:port` opens that name (as requested) or, for an IP entry, that
 *   address (as resolved); with a port, only that port. Tenants cannot open anything.
 * - The refusal happens before any connection, so it says nothing about what (if anything)
 *   answers at the refused address; its message names the host and the setting, never the
 *   resolved address.
 */
import dns from 'node:dns';
import net from 'node:net';
import { canonicalAddress, classifyAddress, type AddressKind } from './addresses.js';

/** One EGRESS_ALLOW_PRIVATE_HOSTS entry. */
export interface PrivateHostRule {
  /** Lower case, no brackets, no trailing dot. */
  host: string;
  /** Null: every port. */
  port: number | null;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Name resolution: all addresses of a name (tests inject their own). */
export type EgressLookup = (host: string) => Promise<ResolvedAddress | ResolvedAddress[]>;

export const ALLOW_PRIVATE_SETTING = 'EGRESS_ALLOW_PRIVATE_HOSTS';

/** Lower case, without IPv6 brackets or trailing dots. */
export function normalizeHost(h: string): string {
  let s = h.trim().toLowerCase();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  while (s.endsWith('.')) s = s.slice(0, -1);
  return s;
}

/**
 * Parses EGRESS_ALLOW_PRIVATE_HOSTS: comma-separated `host`, `host:port`, `ipv4:port`,
 * `[ipv6]:port` or a bare IPv6 address. Every bad entry is reported.
 */
export function parsePrivateHostRules(raw: string): {
  rules: PrivateHostRule[];
  problems: string[];
} {
  const rules: PrivateHostRule[] = [];
  const problems: string[] = [];
  for (const entry of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let host: string;
    let portText: string | null = null;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed) [host, portText] = [bracketed[1], bracketed[2] ?? null];
    else if (net.isIPv6(entry)) host = entry;
    else {
      const m = /^([^:]+)(?::(\d+))?$/.exec(entry);
      if (!m) {
        problems.push(`${ALLOW_PRIVATE_SETTING}: '${entry}' is not host or host:port`);
        continue;
      }
      [host, portText] = [m[1], m[2] ?? null];
    }
    host = normalizeHost(host);
    const port = portText === null ? null : Number(portText);
    if (
      !net.isIP(host) &&
      !/^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$/.test(host)
    ) {
      problems.push(`${ALLOW_PRIVATE_SETTING}: '${entry}' is not a host name or IP address`);
      continue;
    }
    if (port !== null && (!Number.isInteger(port) || port < 1 || port > 65535)) {
      problems.push(`${ALLOW_PRIVATE_SETTING}: '${entry}' has a port outside 1-65535`);
      continue;
    }
    rules.push({ host, port });
  }
  return { rules, problems };
}

/** A destination the policy refuses. Raised before any connection is attempted. */
export class EgressRefusedError extends Error {
  override readonly name = 'EgressRefusedError';
  readonly code = 'EGRESS_REFUSED';
  constructor(
    readonly host: string,
    readonly port: number,
    /** Kind of the refused address (logged; never shown with the address itself). */
    readonly kind: AddressKind,
  ) {
    super(
      `${host} is a private or reserved address; private addresses are not allowed unless the operator opens them (${ALLOW_PRIVATE_SETTING})`,
    );
  }
}

/** The policy's refusal inside `err`'s cause chain, if any. */
export function egressRefusalIn(err: unknown): EgressRefusedError | null {
  for (
    let e: unknown = err, depth = 0;
    e && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (e instanceof EgressRefusedError) return e;
  }
  return null;
}

export interface EgressPolicy {
  /**
   * Resolves `host` once, checks every address, and returns the address to connect to.
   * Throws EgressRefusedError for a refused destination; lookup errors (ENOTFOUND, …) pass through.
   */
  resolve(host: string, port: number): Promise<ResolvedAddress>;
  /**
   * For validation without DNS: the refusal for a literal IP `host` (decimal, hex and octal
   * forms included when they come from a parsed URL), or null (allowed, or a name).
   */
  checkLiteral(host: string, port: number): EgressRefusedError | null;
  /** The operator's EGRESS_ALLOW_PRIVATE_HOSTS rules. */
  readonly allowPrivateHosts: readonly PrivateHostRule[];
}

export interface EgressPolicyOptions {
  /** Rules, or raw `host`/`host:port` strings. */
  allowPrivateHosts?: ReadonlyArray<PrivateHostRule | string>;
  lookup?: EgressLookup;
  /** A lookup taking longer fails with code EAI_AGAIN. Default 10 s. */
  lookupTimeoutMs?: number;
}

const defaultLookup: EgressLookup = async (host) => {
  const all = await dns.promises.lookup(host, { all: true, verbatim: true });
  return all.map((r) => ({ address: r.address, family: r.family === 6 ? 6 : 4 }));
};

export function createEgressPolicy(opts: EgressPolicyOptions = {}): EgressPolicy {
  const rules: PrivateHostRule[] = [];
  for (const r of opts.allowPrivateHosts ?? []) {
    if (typeof r !== 'string') rules.push({ host: normalizeHost(r.host), port: r.port });
    else {
      const parsed = parsePrivateHostRules(r);
      if (parsed.problems.length) throw new Error(parsed.problems.join('; '));
      rules.push(...parsed.rules);
    }
  }
  const lookup = opts.lookup ?? defaultLookup;
  const lookupTimeoutMs = opts.lookupTimeoutMs ?? 10_000;
  const boundedLookup = (host: string): Promise<ResolvedAddress | ResolvedAddress[]> => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            Object.assign(new Error(`${host}: name resolution timed out`), { code: 'EAI_AGAIN' }),
          ),
        lookupTimeoutMs,
      );
    });
    return Promise.race([lookup(host), expired]).finally(() => clearTimeout(timer));
  };
  const ruleAddresses = rules.map((r) => ({ ...r, canonical: canonicalAddress(r.host) }));

  const opened = (host: string, port: number, address: string): boolean => {
    const canonical = canonicalAddress(address);
    return ruleAddresses.some(
      (r) =>
        (r.port === null || r.port === port) &&
        (r.host === host || (r.canonical !== null && r.canonical === canonical)),
    );
  };

  const check = (host: string, port: number, address: string): EgressRefusedError | null => {
    const { kind } = classifyAddress(address);
    if (kind === 'public' || opened(host, port, address)) return null;
    return new EgressRefusedError(host, port, kind);
  };

  return {
    allowPrivateHosts: rules,
    checkLiteral(rawHost, port) {
      const host = normalizeHost(rawHost);
      return net.isIP(host.split('%')[0]) ? check(host, port, host) : null;
    },
    async resolve(rawHost, port) {
      const host = normalizeHost(rawHost);
      const family = net.isIP(host.split('%')[0]);
      let answers: ResolvedAddress[];
      if (family) answers = [{ address: host, family: family === 6 ? 6 : 4 }];
      else {
        const got = await boundedLookup(host);
        answers = Array.isArray(got) ? got : [got];
        if (answers.length === 0)
          throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
      }
      for (const a of answers) {
        const refused = check(host, port, a.address);
        if (refused) throw refused;
      }
      return answers[0];
    },
  };
}
