/**
 * The environment's part of the outbound proxy's policy: which host NAMES a session may reach
 * (allowlist, denylist, unrestricted). Which ADDRESSES may be reached is not the environment's
 * call: that is the platform's egress policy (core/src/egress), applied by the proxy after
 * this decision, whatever the lists say. So allow-listing `127.0.0.1` or `localhost` does not
 * open loopback; only the operator's EGRESS_ALLOW_PRIVATE_HOSTS does.
 *
 * Tested in core/test/proxy.policy.test.ts ("hostPolicy").
 */
import { normalizeHost } from '../egress/policy.js';

/** What the policy and the credential hook see of one outbound request. */
export interface ProxyRequestContext {
  tenantId: string;
  sessionId: string;
  /** HTTP method; `CONNECT` for tunnels. */
  method: string;
  /** Lower case, without IPv6 brackets or a trailing dot. */
  host: string;
  port: number;
  /** `http`: a forwarded absolute-URI request; `connect`: a tunnel (usually HTTPS). */
  kind: 'http' | 'connect';
}

export interface PolicyDecision {
  allow: boolean;
  /** Short machine-readable reason (logged), e.g. `denylist`, `not_in_allowlist`, `allowlist`. */
  reason?: string;
}

export type ProxyPolicy = (ctx: ProxyRequestContext) => PolicyDecision;

/** `*.example.com` matches any subdomain of example.com (not example.com itself); else exact. */
export function hostMatches(pattern: string, host: string): boolean {
  const p = normalizeHost(pattern);
  const h = normalizeHost(host);
  if (!p) return false;
  if (p.startsWith('*.')) {
    const suffix = p.slice(1); // ".example.com"
    return h.length > suffix.length && h.endsWith(suffix);
  }
  return p === h;
}

/**
 * The policy of an environment's `network` settings:
 * - a host on the denylist is always refused (the denylist wins);
 * - when the allowlist is non-empty, or `unrestricted` is false, only allowlisted hosts pass;
 * - otherwise every destination the egress policy permits is allowed.
 * An allowlist entry never opens a private address (see the file header).
 */
export function hostPolicy(cfg: {
  allowlist?: readonly string[];
  denylist?: readonly string[];
  unrestricted?: boolean;
}): ProxyPolicy {
  const allow = (cfg.allowlist ?? []).filter((h) => h.trim() !== '');
  const deny = (cfg.denylist ?? []).filter((h) => h.trim() !== '');
  const restricted = allow.length > 0 || cfg.unrestricted === false;
  return (ctx) => {
    if (deny.some((p) => hostMatches(p, ctx.host))) return { allow: false, reason: 'denylist' };
    if (restricted) {
      if (allow.some((p) => hostMatches(p, ctx.host))) return { allow: true, reason: 'allowlist' };
      return { allow: false, reason: 'not_in_allowlist' };
    }
    return { allow: true, reason: 'unrestricted' };
  };
}
