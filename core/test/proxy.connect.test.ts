/**
 * CONNECT tunnels through the outbound proxy (core/src/egress/proxy/tunnel.ts): byte-for-byte
 * tunnels, refusals, malformed targets, no credential hook, idle and close; and the proxy on a
 * unix socket, removed on close.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostPolicy } from '../src/egress/proxy/proxy.js';
import {
  connectVia,
  drain,
  echoPort,
  echoSockets,
  originPort,
  proxies,
  startProxy,
  useProxyFixtures,
  waitFor,
  type Reply,
} from './proxy.fixtures.js';

useProxyFixtures();

describe('outbound proxy: CONNECT tunnels', () => {
  it('tunnels byte-for-byte to an allowed host and logs sizes without a path', async () => {
    const { proxy, logs } = await startProxy();
    const { status, socket, head } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    expect(head.length).toBe(0);
    const payload = randomBytes(256 * 1024);
    const received: Buffer[] = [];
    let total = 0;
    const got = new Promise<Buffer>((resolve) => {
      socket.on('data', (c: Buffer) => {
        received.push(c);
        total += c.length;
        if (total >= payload.length) resolve(Buffer.concat(received));
      });
    });
    socket.write(payload);
    const back = await got;
    expect(back.equals(payload)).toBe(true);
    socket.end();
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      method: 'CONNECT',
      host: '127.0.0.1',
      port: echoPort,
      path: null,
      status: 200,
      allowed: true,
      bytes_in: payload.length,
      bytes_out: payload.length,
    });
  });

  it('refuses a CONNECT to a host outside the policy with 403', async () => {
    const { proxy, logs } = await startProxy({
      policy: hostPolicy({ allowlist: ['only.example.com'] }),
    });
    const { status, socket, head } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(403);
    const body = (await drain(socket, head)).toString('utf8');
    expect(body).toContain('127.0.0.1');
    await waitFor(() => logs.length === 1);
    expect(logs[0]).toMatchObject({
      method: 'CONNECT',
      host: '127.0.0.1',
      status: 403,
      allowed: false,
      reason: 'not_in_allowlist',
    });
  });

  it('rejects a malformed CONNECT target', async () => {
    const { proxy } = await startProxy();
    const { status, socket } = await connectVia(proxy, 'no-port-here');
    expect(status).toBe(400);
    socket.destroy();
  });

  it('does not consult the credential hook for tunnels (no TLS interception)', async () => {
    let calls = 0;
    const { proxy } = await startProxy({
      credentialHook: async () => {
        calls++;
        return { authorization: 'x' };
      },
    });
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    socket.destroy();
    expect(calls).toBe(0);
  });

  it('closes idle tunnels', async () => {
    const { proxy, logs } = await startProxy({ limits: { idleTimeoutMs: 200 } });
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('error', () => {});
    await closed;
    await waitFor(() => logs.length === 1);
    expect(logs[0].status).toBe(200);
  });

  it('closing the proxy closes open tunnels', async () => {
    const { proxy, logs } = await startProxy();
    const { status, socket } = await connectVia(proxy, `127.0.0.1:${echoPort}`);
    expect(status).toBe(200);
    socket.write('ping');
    await new Promise<void>((r) => socket.once('data', () => r()));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('error', () => {});
    await proxy.close();
    await closed;
    await waitFor(() => echoSockets.size === 0);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 200, bytes_in: 4, bytes_out: 4 });
  });
});

describe('outbound proxy: unix socket', () => {
  it('listens on a unix socket and removes it on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'af-proxy-'));
    try {
      const socketPath = join(dir, 'proxy.sock');
      const { proxy, logs } = await startProxy({ listen: { socketPath } });
      expect(proxy.address).toBe(`unix:${socketPath}`);
      const r = await new Promise<Reply>((resolve, reject) => {
        const req = http.request({
          socketPath,
          method: 'GET',
          path: `http://127.0.0.1:${originPort}/via-unix`,
          headers: { host: `127.0.0.1:${originPort}` },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
        });
        req.end();
      });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ url: '/via-unix' });
      const tunnel = await connectVia(proxy, `127.0.0.1:${echoPort}`);
      expect(tunnel.status).toBe(200);
      tunnel.socket.destroy();
      await waitFor(() => logs.length === 2);
      await proxy.close();
      expect(existsSync(socketPath)).toBe(false);

      // A stale socket file left behind does not prevent listening again.
      // (A process killed while listening leaves its socket file behind.)
      spawnSync(process.execPath, [
        '-e',
        `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
      ]);
      expect(existsSync(socketPath)).toBe(true);
      const again = await startProxy({ listen: { socketPath } });
      expect(again.proxy.address).toBe(`unix:${socketPath}`);
    } finally {
      await Promise.all(proxies.splice(0).map((p) => p.close()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
