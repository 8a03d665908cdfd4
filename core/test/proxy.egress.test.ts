/**
 * The platform egress policy in the outbound proxy: private addresses refused whatever the
 * allowlist says (literals, names after resolution, every IPv4 form), the same refusal for open
 * and closed ports, EGRESS_ALLOW_PRIVATE_HOSTS opening exactly one host:port, and a connection
 * going to the address that was checked (no DNS rebinding).
 */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { hostPolicy } from '../src/egress/proxy/proxy.js';
import { createEgressPolicy } from '../src/egress/policy.js';
import {
  connectVia,
  drain,
  echoPort,
  freePort,
  listenOnce,
  originPort,
  seen,
  startProxy,
  useProxyFixtures,
  viaProxy,
  waitFor,
} from './proxy.fixtures.js';

useProxyFixtures();

describe('outbound proxy: egress policy', () => {
  it('refuses private addresses whatever the allowlist says: literal, localhost and other names after resolution, every IPv4 form', async () => {
    const lookups: string[] = [];
    const system = createEgressPolicy(); // nothing opened, the system resolver
    const allowAll = hostPolicy({
      allowlist: [
        '127.0.0.1',
        'localhost',
        '::1',
        '::ffff:7f00:1',
        '2130706433',
        '0x7f000001',
        'rebind.example',
      ],
    });
    const { proxy, logs } = await startProxy({ policy: allowAll, egress: system });
    const before = seen.length;
    for (const url of [
      `http://127.0.0.1:${originPort}/x`,
      `http://localhost:${originPort}/x`,
      `http://[::1]:${originPort}/x`,
      `http://[::ffff:127.0.0.1]:${originPort}/x`,
      `http://2130706433:${originPort}/x`, // decimal: the URL parser makes it 127.0.0.1
      `http://0x7f.0.0.1:${originPort}/x`, // hex
      `http://0177.0.0.1:${originPort}/x`, // octal
    ]) {
      const r = await viaProxy(proxy, url);
      expect(r.status, url).toBe(403);
      expect(r.headers['proxy-status'], url).toMatch(/destination_ip_prohibited/);
      expect(r.body, url).not.toMatch(/refused the connection|ECONNREFUSED/);
    }
    for (const authority of [
      `127.0.0.1:${echoPort}`,
      `localhost:${echoPort}`,
      `[::1]:${echoPort}`,
      `2130706433:${echoPort}`,
      `0x7f000001:${echoPort}`,
    ]) {
      const tunnel = await connectVia(proxy, authority);
      expect(tunnel.status, authority).toBe(403);
      tunnel.socket.destroy();
    }
    // A name the (injected) resolver points at loopback.
    const named = await startProxy({
      policy: allowAll,
      egress: createEgressPolicy({
        lookup: async (h) => {
          lookups.push(h);
          return { address: '127.0.0.1', family: 4 };
        },
      }),
    });
    const r = await viaProxy(named.proxy, `http://rebind.example:${originPort}/x`);
    expect(r.status).toBe(403);
    expect(lookups).toEqual(['rebind.example']);
    expect(seen.length).toBe(before);
    await waitFor(() => logs.length === 12 && named.logs.length === 1);
    for (const l of [...logs, ...named.logs])
      expect(l).toMatchObject({ allowed: false, reason: 'private_address', status: 403 });
  });

  it('gives the same refusal for an open and a closed private port (no port scanning through the proxy)', async () => {
    const closedPort = await freePort();
    const { proxy } = await startProxy({ egress: createEgressPolicy() });
    const open = await viaProxy(proxy, `http://127.0.0.1:${originPort}/`);
    const closed = await viaProxy(proxy, `http://127.0.0.1:${closedPort}/`);
    expect([open.status, closed.status]).toEqual([403, 403]);
    expect(open.body).toBe(closed.body);
    expect(open.headers['proxy-status']).toBe(closed.headers['proxy-status']);
    const refusal = async (authority: string) => {
      const t = await connectVia(proxy, authority);
      return { status: t.status, body: (await drain(t.socket, t.head)).toString() };
    };
    const [t1, t2] = [
      await refusal(`127.0.0.1:${echoPort}`),
      await refusal(`127.0.0.1:${closedPort}`),
    ];
    expect([t1.status, t2.status]).toEqual([403, 403]);
    expect(t1.body).toBe(t2.body);
  });

  it('EGRESS_ALLOW_PRIVATE_HOSTS host:port opens exactly that port', async () => {
    const otherPort = await listenOnce('other');
    const { proxy, logs } = await startProxy({
      policy: hostPolicy({ unrestricted: true }),
      egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${originPort}`] }),
    });
    expect((await viaProxy(proxy, `http://127.0.0.1:${originPort}/opened`)).status).toBe(200);
    const other = await viaProxy(proxy, `http://127.0.0.1:${otherPort.port}/closed`);
    expect(other.status).toBe(403);
    expect(otherPort.hits()).toBe(0);
    // A bare host opens every port of that host, by name.
    const byName = await startProxy({
      policy: hostPolicy({ unrestricted: true }),
      egress: createEgressPolicy({ allowPrivateHosts: ['localhost'] }),
    });
    expect((await viaProxy(byName.proxy, `http://localhost:${otherPort.port}/x`)).status).toBe(200);
    expect((await viaProxy(byName.proxy, `http://127.0.0.1:${otherPort.port}/x`)).status).toBe(403);
    await otherPort.close();
    await waitFor(() => logs.length === 2);
    expect(logs.map((l) => [l.status, l.reason])).toEqual([
      [200, 'unrestricted'],
      [403, 'private_address'],
    ]);
  });

  it('connects to the address it checked: a rebinding resolver cannot switch it', async () => {
    // Same port on 127.0.0.2: where a second, different answer would lead.
    const decoy = http.createServer((_q, res) => res.end('decoy'));
    await new Promise<void>((r) => decoy.listen(originPort, '127.0.0.2', () => r()));
    let calls = 0;
    const lookup = async () => ({
      address: calls++ % 2 === 0 ? '127.0.0.1' : '127.0.0.2',
      family: 4 as const,
    });
    try {
      const { proxy } = await startProxy({
        policy: hostPolicy({ unrestricted: true }),
        egress: createEgressPolicy({ allowPrivateHosts: [`127.0.0.1:${originPort}`], lookup }),
      });
      const first = await viaProxy(proxy, `http://flip.test:${originPort}/flip`);
      expect(first.status).toBe(200);
      expect(JSON.parse(first.body)).toMatchObject({ url: '/flip' });
      expect(calls).toBe(1);
      // The next request resolves again: this time to the unopened address, refused.
      const second = await viaProxy(proxy, `http://flip.test:${originPort}/flip`);
      expect(second.status).toBe(403);
      expect(second.body).not.toContain('decoy');
      // An answer mixing an opened and an unopened address is refused whole.
      const mixed = await startProxy({
        policy: hostPolicy({ unrestricted: true }),
        egress: createEgressPolicy({
          allowPrivateHosts: [`127.0.0.1:${originPort}`],
          lookup: async () => [
            { address: '127.0.0.1', family: 4 },
            { address: '127.0.0.2', family: 4 },
          ],
        }),
      });
      expect((await viaProxy(mixed.proxy, `http://both.test:${originPort}/`)).status).toBe(403);
    } finally {
      decoy.closeAllConnections();
      await new Promise((r) => decoy.close(r));
    }
  });
});
