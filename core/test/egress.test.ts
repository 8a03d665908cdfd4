/**
 * The egress policy (core/src/egress): address classification in every textual form, the
 * EGRESS_ALLOW_PRIVATE_HOSTS rules, resolve-once-check-every-address, and egressFetch
 * connecting only to the checked address (a rebinding resolver cannot switch it).
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { TEST_CERT, TEST_KEY } from './fixtures/testCert.js';
import {
  canonicalAddress,
  classifyAddress,
  createEgressPolicy,
  egressFetch,
  egressRefusalIn,
  EgressRefusedError,
  isNonPublicAddress,
  parsePrivateHostRules,
} from '../src/egress/index.js';

describe('address classification', () => {
  const cases: Array<[string, string]> = [
    // IPv4
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['169.254.0.1', 'link_local'],
    ['169.254.169.254', 'cloud_metadata'],
    ['169.254.170.2', 'cloud_metadata'],
    ['100.100.100.200', 'cloud_metadata'],
    ['192.0.0.192', 'cloud_metadata'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['192.88.99.1', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['fec0::1', 'site_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['fd00:ec2::254', 'cloud_metadata'],
    ['ff02::1', 'multicast'],
    ['100::1', 'reserved'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'reserved'],
    ['2001::1', 'teredo'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['::7f00:1', 'ipv4_compatible'],
    ['::127.0.0.1', 'ipv4_compatible'],
    ['::8.8.8.8', 'ipv4_compatible'],
    ['::ffff:0:127.0.0.1', 'reserved'],
    ['64:ff9b:1::a00:1', 'private'],
    ['4000::1', 'reserved'],
    // IPv4 embedded in IPv6: judged by the IPv4 address
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:169.254.169.254', 'cloud_metadata'],
    ['::ffff:a9fe:a9fe', 'cloud_metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud_metadata'],
    ['64:ff9b::c0a8:101', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'cloud_metadata'],
    ['2002:c0a8:0101::5', 'private'],
    // public
    ['93.184.216.34', 'public'],
    ['1.1.1.1', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'],
    ['2002:808:808::1', 'public'],
    // not addresses
    ['localhost', 'not_an_address'],
    ['2130706433', 'not_an_address'],
    ['', 'not_an_address'],
  ];
  it.each(cases)('%s is %s', (addr, kind) => {
    expect(classifyAddress(addr).kind).toBe(kind);
    expect(isNonPublicAddress(addr)).toBe(kind !== 'public');
  });

  it('names the IPv4 address an IPv6 form embeds, and canonicalizes for comparison', () => {
    expect(classifyAddress('::ffff:7f00:1').embeddedIPv4).toBe('127.0.0.1');
    expect(classifyAddress('2002:a9fe:a9fe::').embeddedIPv4).toBe('169.254.169.254');
    expect(canonicalAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(canonicalAddress('[::1]')).toBe(canonicalAddress('0:0::1'));
    expect(canonicalAddress('example.com')).toBeNull();
  });
});

describe('EGRESS_ALLOW_PRIVATE_HOSTS', () => {
  it('parses host, host:port, ipv4:port, [ipv6]:port and bare IPv6; lists every bad entry', () => {
    expect(
      parsePrivateHostRules(' db.internal , 10.0.0.5:5432,[::1]:8080, fd00::7 ,Mirror.Corp.:443')
        .rules,
    ).toEqual([
      { host: 'db.internal', port: null },
      { host: '10.0.0.5', port: 5432 },
      { host: '::1', port: 8080 },
      { host: 'fd00::7', port: null },
      { host: 'mirror.corp', port: 443 },
    ]);
    const bad = parsePrivateHostRules('ok.host,http://x,a:99999,b c,:80');
    expect(bad.rules).toEqual([{ host: 'ok.host', port: null }]);
    expect(bad.problems).toHaveLength(4);
    expect(bad.problems.join('\n')).toContain("'http://x'");
  });

  it('is read by the config (every problem listed)', () => {
    const base = { DATA_DIR: '/tmp/agentfleet-egress-config-test' };
    expect(
      loadConfig('all', { ...base, EGRESS_ALLOW_PRIVATE_HOSTS: 'a.internal:8080' }).egress
        .allowPrivateHosts,
    ).toEqual([{ host: 'a.internal', port: 8080 }]);
    expect(loadConfig('all', base).egress.allowPrivateHosts).toEqual([]);
    expect(() => loadConfig('all', { ...base, EGRESS_ALLOW_PRIVATE_HOSTS: 'x:0,y z' })).toThrow(
      /EGRESS_ALLOW_PRIVATE_HOSTS: 'x:0'[\s\S]*EGRESS_ALLOW_PRIVATE_HOSTS: 'y z'/,
    );
  });
});

describe('createEgressPolicy', () => {
  const lookupTo =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));

  it('refuses a name that resolves to a private address, and checks every address of the answer', async () => {
    const p = createEgressPolicy({ lookup: lookupTo('93.184.216.34', '127.0.0.1') });
    const err = await p.resolve('mixed.example', 443).catch((e) => e);
    expect(err).toBeInstanceOf(EgressRefusedError);
    expect(err).toMatchObject({ host: 'mixed.example', port: 443, kind: 'loopback' });
    // The message names the host and the setting, never the resolved address.
    expect(err.message).toContain('mixed.example');
    expect(err.message).toContain('EGRESS_ALLOW_PRIVATE_HOSTS');
    expect(err.message).not.toContain('127.0.0.1');
    await expect(
      createEgressPolicy({ lookup: lookupTo('93.184.216.34') }).resolve('ok.example', 443),
    ).resolves.toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('refuses literal private addresses without a lookup, in every form', async () => {
    let lookups = 0;
    const p = createEgressPolicy({
      lookup: async () => {
        lookups++;
        return { address: '1.1.1.1', family: 4 };
      },
    });
    for (const host of [
      '127.0.0.1',
      '[::1]',
      '::ffff:127.0.0.1',
      '169.254.169.254',
      'fd00:ec2::254',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
      '0.0.0.0',
    ]) {
      await expect(p.resolve(host, 80), host).rejects.toBeInstanceOf(EgressRefusedError);
      expect(p.checkLiteral(host, 80), host).toBeInstanceOf(EgressRefusedError);
    }
    // Decimal, hex and octal forms reach the policy as dotted quads once a URL is parsed.
    for (const url of [
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://127.1/',
    ]) {
      expect(p.checkLiteral(new URL(url).hostname, 80), url).toBeInstanceOf(EgressRefusedError);
    }
    expect(p.checkLiteral('example.com', 80)).toBeNull();
    expect(lookups).toBe(0);
  });

  it('opens exactly what the operator lists: a name, an address, a port', async () => {
    const p = createEgressPolicy({
      allowPrivateHosts: ['db.internal', '10.0.0.5:5432', '[::1]:8080'],
      lookup: lookupTo('10.0.0.9'),
    });
    await expect(p.resolve('db.internal', 1234)).resolves.toEqual({
      address: '10.0.0.9',
      family: 4,
    });
    await expect(p.resolve('DB.Internal.', 1)).resolves.toMatchObject({ address: '10.0.0.9' });
    await expect(p.resolve('other.internal', 1234)).rejects.toBeInstanceOf(EgressRefusedError);
    expect(p.checkLiteral('10.0.0.5', 5432)).toBeNull();
    expect(p.checkLiteral('10.0.0.5', 5433)).toBeInstanceOf(EgressRefusedError);
    expect(p.checkLiteral('::1', 8080)).toBeNull();
    expect(p.checkLiteral('::1', 8081)).toBeInstanceOf(EgressRefusedError);
    // An IP entry opens that address whatever name resolves to it.
    const byAddress = createEgressPolicy({
      allowPrivateHosts: ['10.0.0.5:5432'],
      lookup: lookupTo('10.0.0.5'),
    });
    await expect(byAddress.resolve('pg.corp', 5432)).resolves.toMatchObject({
      address: '10.0.0.5',
    });
    await expect(byAddress.resolve('pg.corp', 22)).rejects.toBeInstanceOf(EgressRefusedError);
  });

  it('passes lookup failures through unchanged', async () => {
    const p = createEgressPolicy({
      lookup: async () => {
        throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
      },
    });
    await expect(p.resolve('missing.example', 80)).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(
      createEgressPolicy({ lookup: async () => [] }).resolve('empty.example', 80),
    ).rejects.toMatchObject({ code: 'ENOTFOUND' });
    // A resolver that never answers is bounded.
    await expect(
      createEgressPolicy({ lookup: () => new Promise(() => {}), lookupTimeoutMs: 50 }).resolve(
        'hang.example',
        80,
      ),
    ).rejects.toMatchObject({ code: 'EAI_AGAIN' });
  });
});

/** A port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const p = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return p;
}

describe('egressFetch', () => {
  let good: http.Server;
  let other: http.Server;
  let port: number;
  const hits = { good: 0, other: 0 };
  beforeAll(async () => {
    good = http.createServer((_req, res) => {
      hits.good++;
      res.end('checked address');
    });
    await new Promise<void>((r) => good.listen(0, '127.0.0.1', () => r()));
    port = (good.address() as AddressInfo).port;
    // Same port on another loopback address: where a rebinding answer would point.
    other = http.createServer((_req, res) => {
      hits.other++;
      res.end('rebound address');
    });
    await new Promise<void>((r) => other.listen(port, '127.0.0.2', () => r()));
  });
  afterAll(async () => {
    good.closeAllConnections();
    other.closeAllConnections();
    await new Promise((r) => good.close(r));
    await new Promise((r) => other.close(r));
  });

  it('refuses loopback before connecting: the same answer whether a port is open or closed', async () => {
    const f = egressFetch(createEgressPolicy());
    try {
      const open = await f(`http://127.0.0.1:${port}/`).catch((e) => e);
      const closedPort = await freePort();
      const closed = await f(`http://127.0.0.1:${closedPort}/`).catch((e) => e);
      const byName = await f(`http://localhost:${port}/`).catch((e) => e);
      for (const e of [open, closed, byName])
        expect(egressRefusalIn(e)).toBeInstanceOf(EgressRefusedError);
      expect(egressRefusalIn(open)!.message).toBe(egressRefusalIn(closed)!.message);
      expect(hits.good).toBe(0);
    } finally {
      await f.close();
    }
  });

  it('connects to the checked address only: a resolver that answers differently each time cannot switch it', async () => {
    let calls = 0;
    // First answer: the opened address; every later answer: another loopback address.
    const lookup = async () => ({
      address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2',
      family: 4 as const,
    });
    const f = egressFetch(createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${port}`], lookup }));
    try {
      const res = await f(`http://rebind.test:${port}/`);
      expect(await res.text()).toBe('checked address');
      expect(calls).toBe(1);
      expect(hits.other).toBe(0);
      // A new connection resolves again; the second answer is checked and refused.
      await f.close();
      const g = egressFetch(
        createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${port}`], lookup }),
      );
      const err = await g(`http://rebind.test:${port}/`).catch((e) => e);
      await g.close();
      expect(egressRefusalIn(err)).toBeInstanceOf(EgressRefusedError);
      expect(hits.other).toBe(0);
    } finally {
      await f.close().catch(() => {});
    }
  });

  it('checks every redirect hop', async () => {
    const redirector = http.createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.2:${port}/` });
      res.end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', () => r()));
    const rport = (redirector.address() as AddressInfo).port;
    const f = egressFetch(createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${rport}`] }));
    try {
      const err = await f(`http://127.0.0.1:${rport}/`).catch((e) => e);
      expect(egressRefusalIn(err)).toBeInstanceOf(EgressRefusedError);
      expect(hits.other).toBe(0);
    } finally {
      await f.close();
      redirector.closeAllConnections();
      await new Promise((r) => redirector.close(r));
    }
  });
});

describe('egressFetch over TLS', () => {
  it('connects to the checked address but verifies the certificate against the requested name', async () => {
    const server = https.createServer({ key: TEST_KEY, cert: TEST_CERT }, (_req, res) =>
      res.end('tls ok'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const lookup = async () => ({ address: '127.0.0.1', family: 4 as const });
    const f = egressFetch(
      createEgressPolicy({ allowPrivateHosts: ['localhost', 'other.test'], lookup }),
      { ca: TEST_CERT },
    );
    try {
      // The certificate names localhost: SNI and the check use the name, the socket the checked IP.
      expect(await (await f(`https://localhost:${port}/`)).text()).toBe('tls ok');
      // Same address, a name the certificate does not carry: refused by TLS, not silently accepted.
      const err = await f(`https://other.test:${port}/`).catch((e) => e);
      expect(String(err?.cause?.code ?? err?.cause?.message)).toMatch(
        /ERR_TLS_CERT_ALTNAME_INVALID|altname|Hostname/i,
      );
    } finally {
      await f.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
