/**
 * The session network policy of the outbound proxy (core/src/egress/proxy/policy.ts):
 * denylist wins, allowlist restricts, `*.suffix` matches subdomains only; and which addresses
 * count as non-public.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { hostMatches, hostPolicy, isNonPublicAddress } from '../src/egress/proxy/proxy.js';
import { mcpServerHosts, sessionHostPolicy } from '../src/egress/proxy/policy.js';
import { PACKAGE_REGISTRY_HOSTS } from '../src/egress/registries.js';

const at = (host: string) => ({
  tenantId: 't',
  sessionId: 's',
  method: 'CONNECT',
  host,
  port: 443,
  kind: 'connect' as const,
});

describe('hostPolicy', () => {
  it('denylist wins, allowlist restricts, *.suffix matches subdomains only', () => {
    const ctx = (host: string) => ({
      tenantId: 't',
      sessionId: 's',
      method: 'GET',
      host,
      port: 443,
      kind: 'connect' as const,
    });
    const p = hostPolicy({
      allowlist: ['*.example.com', 'api.other.org'],
      denylist: ['bad.example.com'],
    });
    expect(p(ctx('a.example.com'))).toMatchObject({ allow: true, reason: 'allowlist' });
    expect(p(ctx('deep.a.example.com')).allow).toBe(true);
    expect(p(ctx('example.com'))).toMatchObject({ allow: false, reason: 'not_in_allowlist' });
    expect(p(ctx('evilexample.com')).allow).toBe(false);
    expect(p(ctx('api.other.org')).allow).toBe(true);
    expect(p(ctx('bad.example.com'))).toMatchObject({ allow: false, reason: 'denylist' });

    const open = hostPolicy({ allowlist: [], denylist: ['*.tracker.net'], unrestricted: true });
    expect(open(ctx('anything.io'))).toMatchObject({ allow: true, reason: 'unrestricted' });
    expect(open(ctx('x.tracker.net')).allow).toBe(false);
    // An allowlist entry only lets a NAME through; it opens no address (egress policy).
    expect(Object.keys(hostPolicy({ allowlist: ['127.0.0.1'] })(ctx('127.0.0.1')))).toEqual([
      'allow',
      'reason',
    ]);

    // limited networking with no hosts: nothing goes out
    expect(hostPolicy({ allowlist: [], unrestricted: false })(ctx('a.example.com')).allow).toBe(
      false,
    );
    expect(hostMatches('API.Example.COM.', 'api.example.com')).toBe(true);
  });

  it('classifies non-public addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ]) {
      expect(isNonPublicAddress(a), a).toBe(true);
    }
    for (const a of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isNonPublicAddress(a), a).toBe(false);
  });

  it('sessionHostPolicy: limited opens allowed_hosts, package registries and MCP hosts only when set', () => {
    const limited = {
      allowlist: ['api.example.com'],
      denylist: [],
      unrestricted: false,
      allow_package_managers: false,
      allow_mcp_servers: false,
    };
    const mcp = [
      { type: 'url', name: 'tools', url: 'https://mcp.tools.example:8443/sse' },
      { type: 'stdio', name: 'local', command: 'x' },
      { type: 'url', name: 'bad', url: 'not a url' },
    ];
    expect(mcpServerHosts(mcp)).toEqual(['mcp.tools.example']);

    const closed = sessionHostPolicy(limited, mcp);
    expect(closed(at('api.example.com'))).toEqual({ allow: true, reason: 'allowlist' });
    expect(closed(at('pypi.org'))).toEqual({ allow: false, reason: 'not_in_allowlist' });
    expect(closed(at('mcp.tools.example'))).toEqual({ allow: false, reason: 'not_in_allowlist' });

    const open = sessionHostPolicy(
      { ...limited, allow_package_managers: true, allow_mcp_servers: true },
      mcp,
    );
    for (const hosts of Object.values(PACKAGE_REGISTRY_HOSTS))
      for (const h of hosts)
        expect(open(at(h)), h).toEqual({ allow: true, reason: 'package_registry' });
    for (const h of [
      'pypi.org',
      'files.pythonhosted.org',
      'registry.npmjs.org',
      'deb.debian.org',
      'crates.io',
      'proxy.golang.org',
      'rubygems.org',
    ])
      expect(open(at(h)).allow, h).toBe(true);
    expect(open(at('mcp.tools.example'))).toEqual({ allow: true, reason: 'mcp_server' });
    // exact names: no subdomain, no look-alike, nothing else
    expect(open(at('evil.pypi.org')).allow).toBe(false);
    expect(open(at('pypi.org.evil.net')).allow).toBe(false);
    expect(open(at('x.mcp.tools.example')).allow).toBe(false);
    expect(open(at('example.net')).allow).toBe(false);

    // the denylist (spec network.denylist) wins over registries and MCP hosts too
    const denied = sessionHostPolicy(
      { ...limited, denylist: ['pypi.org'], allow_package_managers: true },
      mcp,
    );
    expect(denied(at('pypi.org'))).toEqual({ allow: false, reason: 'denylist' });
    expect(denied(at('registry.npmjs.org')).allow).toBe(true);

    // unreadable environment: nothing goes out
    expect(sessionHostPolicy(null, mcp)(at('api.example.com')).allow).toBe(false);
    // unrestricted: every name (addresses are the egress policy's call)
    const unrestricted = sessionHostPolicy({ allowlist: [], denylist: [], unrestricted: true }, []);
    expect(unrestricted(at('anything.io'))).toEqual({ allow: true, reason: 'unrestricted' });
  });
});
