/**
 * The session network policy of the outbound proxy (core/src/sandbox/proxyPolicy.ts):
 * denylist wins, allowlist restricts, `*.suffix` matches subdomains only; and which addresses
 * count as non-public.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { hostMatches, hostPolicy, isNonPublicAddress } from '../src/sandbox/proxy.js';

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
});
