/**
 * The HTTP front door under connection floods (gateway/src/connectionGuard.ts, the stream slots
 * of gateway/src/sse.ts), through raw sockets and requests from chosen loopback addresses
 * (127.0.0.x act as different clients), on a platform with small settings: header timeout 1 s,
 * request timeout 1.5 s, keep-alive 1 s, 8 connections per address, 3 streams per tenant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@agentfleet/core';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { rawFrom, requestFrom, sleep, streamFrom, type OpenStream } from '../../kit/netHelpers.js';

let t: TestPlatform;
let port: number;
beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1500',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: '8',
      SSE_MAX_STREAMS_PER_TENANT: '3',
    },
  });
  port = Number(new URL(t.url).port);
});
afterAll(async () => {
  await t?.close();
});

const MODEL = 'claude-sonnet-4-5';

async function tenantWithSession(name: string) {
  const tenant = await t.newTenant(name);
  const agent = await tenant.client.beta.agents.create({ name, model: MODEL });
  const env = await tenant.client.beta.environments.create({ name });
  const s = await tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  return { ...tenant, sessionId: s.id };
}

describe('timeouts', () => {
  it('header timeout: a silent connection and one trickling its headers are closed after about 1 s, with 408', async () => {
    const silent = await rawFrom('127.0.0.5', port);
    const trickle = await rawFrom('127.0.0.5', port);
    trickle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const timer = setInterval(() => trickle.socket.write('x-slow: 1\r\n'), 100);
    try {
      const [a, b] = await Promise.all([silent.closed, trickle.closed]);
      for (const ms of [a, b]) {
        expect(ms).toBeGreaterThanOrEqual(900);
        expect(ms).toBeLessThan(3000);
      }
      expect(trickle.received()).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(timer);
    }
  });

  it('keep-alive timeout: an idle keep-alive connection is closed about 1 s after its answer', async () => {
    const c = await rawFrom('127.0.0.5', port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(async () => c.received().includes('{"ok":true}'));
    const t0 = Date.now();
    await c.closed;
    const idle = Date.now() - t0;
    expect(idle).toBeGreaterThanOrEqual(800);
    expect(idle).toBeLessThan(3000);
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('per-address and global connection caps', () => {
  it('per-address cap: the 9th connection of one address is closed at once, unread; another address is served; the slot comes back', async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => rawFrom('127.0.0.2', port)));
    const over = await rawFrom('127.0.0.2', port);
    over.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const overMs = await over.closed;
    expect(overMs).toBeLessThan(500);
    expect(over.received()).toBe('');
    expect(held.every((c) => !c.isClosed())).toBe(true);
    // Another client address is not affected.
    expect((await requestFrom('127.0.0.3', `${t.url}/healthz`)).status).toBe(200);
    expect((await requestFrom('127.0.0.3', `${t.url}/v1/agents`, { key: t.apiKey })).status).toBe(
      200,
    );
    // The held connections sent nothing: the header timeout closes them, and the address is
    // served again.
    await Promise.all(held.map((c) => c.closed));
    expect(
      (await waitFor(async () => (await requestFrom('127.0.0.2', `${t.url}/healthz`)).status)) ===
        200,
    ).toBe(true);
  });

  it('global cap: HTTP_MAX_CONNECTIONS bounds all addresses together; by default it is half the soft descriptor limit', async () => {
    const g = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'none',
        HTTP_MAX_CONNECTIONS: '4',
        HTTP_MAX_CONNECTIONS_PER_ADDRESS: '3',
      },
    });
    try {
      const gPort = Number(new URL(g.url).port);
      const a = await Promise.all([1, 2, 3].map(() => rawFrom('127.0.0.6', gPort)));
      const b = await rawFrom('127.0.0.7', gPort);
      await sleep(100);
      const over = await rawFrom('127.0.0.8', gPort);
      expect(await over.closed).toBeLessThan(500);
      expect(over.received()).toBe('');
      expect([...a, b].every((c) => !c.isClosed())).toBe(true);
      for (const c of [...a, b]) c.socket.destroy();
      // Their slots come back once the server has seen them close.
      await waitFor(() =>
        requestFrom('127.0.0.8', `${g.url}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        ),
      );
    } finally {
      await g.close();
    }
    const soft = Number(
      /^Max open files\s+(\d+)/m.exec(
        (await import('node:fs')).readFileSync('/proc/self/limits', 'utf8'),
      )![1],
    );
    expect(t.server.app!.server.maxConnections).toBe(Math.max(64, Math.floor(soft / 2)));
  });

  it('the settings are validated: every problem is listed', () => {
    expect(() =>
      loadConfig('all', {
        HTTP_HEADERS_TIMEOUT_MS: '5000',
        HTTP_REQUEST_TIMEOUT_MS: '1000',
        HTTP_MAX_CONNECTIONS: '10',
        HTTP_MAX_CONNECTIONS_PER_ADDRESS: '20',
        SSE_MAX_STREAMS_PER_TENANT: '0',
        TRUST_PROXY: '10.0.0.1,10.0.0.0/33,proxy.example,::1/129',
        AUTH_FAILURES_GLOBAL_PER_MINUTE: 'x',
      }),
    ).toThrow(
      new RegExp(
        [
          'HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS',
          'HTTP_MAX_CONNECTIONS_PER_ADDRESS must not be larger than HTTP_MAX_CONNECTIONS',
          'SSE_MAX_STREAMS_PER_TENANT must be an integer',
          "TRUST_PROXY: '10.0.0.0/33'",
          "TRUST_PROXY: 'proxy.example'",
          "TRUST_PROXY: '::1/129'",
          'AUTH_FAILURES_GLOBAL_PER_MINUTE must be an integer',
        ]
          .map((s) => `(?=[\\s\\S]*${s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')})`)
          .join(''),
      ),
    );
    expect(
      loadConfig('all', { TRUST_PROXY: ' 10.0.0.1, fd00::/8 ,loopback' }).http.trustProxy,
    ).toEqual(['10.0.0.1', 'fd00::/8', 'loopback']);
  });
});

describe('stream flood', () => {
  it("tenant A's streams past 3 get 429 naming the cap (SSE, /messages, graphql-sse); tenant B opens a stream, runs a turn and reads; the stream outlives the request and keep-alive timeouts", async () => {
    const a = await tenantWithSession('flood-a');
    const b = await tenantWithSession('flood-b');
    const opened: OpenStream[] = [];
    const streamUrl = (id: string) => `${t.url}/v1/sessions/${id}/events/stream`;
    try {
      // Tenant B's stream first: it stays open through everything below.
      const bStream = await streamFrom('127.0.0.4', streamUrl(b.sessionId), { key: b.apiKey });
      opened.push(bStream);
      expect(bStream.status).toBe(200);
      const t0 = Date.now();
      for (let i = 0; i < 3; i++) {
        const s = await streamFrom('127.0.0.4', streamUrl(a.sessionId), { key: a.apiKey });
        opened.push(s);
        expect(s.status).toBe(200);
      }
      // Past the cap: the session stream, GET …/events as a stream, POST …/messages and a
      // graphql-sse subscription are all refused in the error shape.
      const refusals = [
        await requestFrom('127.0.0.4', streamUrl(a.sessionId), { key: a.apiKey }),
        await requestFrom('127.0.0.4', `${t.url}/v1/sessions/${a.sessionId}/events`, {
          key: a.apiKey,
          headers: { accept: 'text/event-stream' },
        }),
        await requestFrom('127.0.0.4', `${t.url}/v1/sessions/${a.sessionId}/messages`, {
          key: a.apiKey,
          method: 'POST',
          headers: BETA,
          json: { content: 'hi' },
        }),
        await requestFrom('127.0.0.4', `${t.url}/graphql/stream`, {
          key: a.apiKey,
          method: 'POST',
          headers: { accept: 'text/event-stream' },
          json: {
            query: `subscription { sessionEvents(sessionId: "${a.sessionId}") { __typename } }`,
          },
        }),
      ];
      for (const r of refusals) {
        expect(r.status).toBe(429);
        expect(r.body).toMatchObject({ type: 'error', error: { type: 'rate_limited' } });
        expect(r.body.error.message).toMatch(/limit 3, SSE_MAX_STREAMS_PER_TENANT/);
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // The refused /messages appended nothing.
      const events = await a.client.beta.sessions.events.list(a.sessionId);
      expect(events.data.filter((e) => e.type === 'user.message')).toEqual([]);

      // Tenant B: another stream, reads, and a turn seen on the stream opened first, which by
      // then has been open longer than the request and keep-alive timeouts.
      const b2 = await streamFrom('127.0.0.4', streamUrl(b.sessionId), { key: b.apiKey });
      opened.push(b2);
      expect(b2.status).toBe(200);
      expect((await b.client.beta.sessions.retrieve(b.sessionId)).id).toBe(b.sessionId);
      expect((await b.client.beta.agents.list()).data.length).toBe(1);
      await sleep(Math.max(0, 2000 - (Date.now() - t0)));
      await b.client.beta.sessions.events.send(b.sessionId, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
      });
      await bStream.until(/event: session\.status_idle/, 15_000);

      // A closed stream gives its slot back.
      opened[1]!.close();
      await waitFor(async () => {
        const s = await streamFrom('127.0.0.4', streamUrl(a.sessionId), { key: a.apiKey });
        opened.push(s);
        return s.status === 200;
      });
    } finally {
      for (const s of opened) s.close();
    }
  }, 40_000);
});
