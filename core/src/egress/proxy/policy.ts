/**
 * The environment's part of the outbound proxy's policy: which host NAMES a session may reach
 * (allowlist, denylist, unrestricted). Which ADDRESSES may be reached is not the environment's
 * call: that is the platform's egress policy (core/src/egress), applied by the proxy after
 * this decision, whatever the lists say. So allow-listing `127.0.0.1` or `localhost` does not
 * open loopback; only the operator's EGRESS_ALLOW_PRIVATE_HOSTS does.
 *
 * An environment with `limited` networking (SDK BetaLimitedNetwork) reaches only: the names in
 * `allowed_hosts`; with `allow_package_managers`, the public package registries
 * (../egress/registries.ts); with `allow_mcp_servers`, the hosts of the session agent's MCP
 * server URLs. Everything else is refused with the proxy's usual denial (403 / CONNECT refused,
 * reason `not_in_allowlist`). A name is `host` (that exact name, case and trailing dot
 * ignored) or `*.suffix` (every subdomain of suffix at any depth, not suffix itself).
 *
 * Tested in core/test/proxy.policy.test.ts ("hostPolicy", "sessionHostPolicy") and, through a
 * real sandbox and the TypeScript SDK, test/e2e/environments/env-networking.test.ts.
 */
import { normalizeHost } from '../policy.js';
import { ALL_PACKAGE_REGISTRY_HOSTS } from '../registries.js';

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
  /** The request's URL path (no query), where known: absent at CONNECT, set per request inside. */
  path?: string;
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
 * - `also` opens more names when restricted, each group with its own reason (package
 *   registries, MCP servers); the denylist still wins over them.
 * An allowlist entry never opens a private address (see the file header).
 */
export function hostPolicy(cfg: {
  allowlist?: readonly string[];
  denylist?: readonly string[];
  unrestricted?: boolean;
  also?: ReadonlyArray<{ hosts: readonly string[]; reason: string }>;
}): ProxyPolicy {
  const allow = (cfg.allowlist ?? []).filter((h) => h.trim() !== '');
  const deny = (cfg.denylist ?? []).filter((h) => h.trim() !== '');
  const also = (cfg.also ?? []).filter((g) => g.hosts.length > 0);
  const restricted = allow.length > 0 || cfg.unrestricted === false;
  return (ctx) => {
    if (deny.some((p) => hostMatches(p, ctx.host))) return { allow: false, reason: 'denylist' };
    if (restricted) {
      if (allow.some((p) => hostMatches(p, ctx.host))) return { allow: true, reason: 'allowlist' };
      for (const g of also)
        if (g.hosts.some((p) => hostMatches(p, ctx.host))) return { allow: true, reason: g.reason };
      return { allow: false, reason: 'not_in_allowlist' };
    }
    return { allow: true, reason: 'unrestricted' };
  };
}

/** The host names of the MCP servers' URLs (`url` servers only; unparsable URLs are skipped). */
export function mcpServerHosts(servers: ReadonlyArray<{ url?: unknown }> | null | undefined) {
  const hosts = new Set<string>();
  for (const s of servers ?? []) {
    if (typeof s?.url !== 'string') continue;
    try {
      const h = normalizeHost(new URL(s.url).hostname);
      if (h) hosts.add(h);
    } catch {
      // not a URL: nothing to open
    }
  }
  return [...hosts];
}

/** What a session's proxy policy is built from: its environment snapshot and its agent. */
export interface SessionNetwork {
  allowlist: readonly string[];
  denylist: readonly string[];
  unrestricted: boolean;
  allow_package_managers?: boolean;
  allow_mcp_servers?: boolean;
}

/**
 * The policy of one session: the environment's `network` (null: unreadable, so nothing is
 * allowed: fail closed), the registries with `allow_package_managers`, the agent's MCP hosts
 * with `allow_mcp_servers`.
 */
export function sessionHostPolicy(
  network: SessionNetwork | null,
  mcpServers: ReadonlyArray<{ url?: unknown }> | null | undefined,
): ProxyPolicy {
  if (!network) return hostPolicy({ unrestricted: false });
  return hostPolicy({
    allowlist: network.allowlist,
    denylist: network.denylist,
    unrestricted: network.unrestricted,
    also: [
      {
        hosts: network.allow_package_managers ? ALL_PACKAGE_REGISTRY_HOSTS : [],
        reason: 'package_registry',
      },
      {
        hosts: network.allow_mcp_servers ? mcpServerHosts(mcpServers) : [],
        reason: 'mcp_server',
      },
    ],
  });
}
