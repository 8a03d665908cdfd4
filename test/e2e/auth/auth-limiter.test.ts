/**
 * The failed-authentication limiter (core/src/auth/auth.ts AuthFailureLimiter, used by
 * gateway/src/requestGuards.ts) and the client address it counts by (TRUST_PROXY): a valid key
 * always passes; unknown keys are limited per client address and globally, with 429
 * `rate_limited` and Retry-After; X-Forwarded-For names the client only when the peer is a
 * trusted proxy. Requests come from chosen loopback addresses (127.0.0.x act as different
 * peers). Budgets are counted per fixed minute window, so each run sends enough failures that
 * one window is over its budget wherever the minute boundary falls.
 */
import { describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { requestFrom, streamFrom, type Answer, type OpenStream } from '../../kit/netHelpers.js';

const bad = (i: number) => `afk_invalid_${i}_${'x'.repeat(40)}`;

/** Unknown keys from `peer` (as X-Forwarded-For `client`, when given) until one gets 429; that answer. */
async function failUntilRefused(
  t: TestPlatform,
  peer: string,
  budget: number,
  client?: (i: number) => string,
): Promise<{ statuses: number[]; refused: Answer }> {
  const statuses: number[] = [];
  for (let i = 0; i <= 2 * budget; i++) {
    const headers: Record<string, string> = client ? { 'x-forwarded-for': client(i) } : {};
    const r = await requestFrom(peer, `${t.url}/v1/agents`, { key: bad(i), headers });
    statuses.push(r.status);
    if (r.status === 429) return { statuses, refused: r };
    expect(r.status).toBe(401);
  }
  throw new Error(`no 429 after ${statuses.length} failures: ${statuses.join(',')}`);
}

function expectRefusal(r: Answer, scope: RegExp) {
  expect(r.status).toBe(429);
  expect(r.body).toMatchObject({ type: 'error', error: { type: 'rate_limited' } });
  expect(r.body.error.message).toMatch(scope);
  expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(60);
}

const get = (t: TestPlatform, peer: string, key: string, xff?: string) =>
  requestFrom(peer, `${t.url}/v1/agents`, {
    key,
    headers: xff ? { 'x-forwarded-for': xff } : {},
  });

describe('failed authentications never refuse a valid key', () => {
  it('without TRUST_PROXY: 30+ bad keys from one address, then a valid key of another tenant from that address gets 200; X-Forwarded-For is ignored', async () => {
    const t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
    try {
      const other = await t.newTenant('bystander');
      const { statuses, refused } = await failUntilRefused(t, '127.0.0.2', 30);
      expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
      expectRefusal(refused, /from this address \(limit 30 per minute\)/);
      // The address is over its budget: its unknown keys get 429, whatever X-Forwarded-For says.
      expectRefusal(await get(t, '127.0.0.2', bad(1000), '198.51.100.7'), /from this address/);
      // Valid keys from the same address: 200, the other tenant's and the operator's.
      expect((await get(t, '127.0.0.2', other.apiKey)).status).toBe(200);
      expect((await get(t, '127.0.0.2', t.operatorKey)).status).toBe(200);
      // Another address still gets 401 for a bad key.
      expect((await get(t, '127.0.0.3', bad(1001))).status).toBe(401);
    } finally {
      await t.close();
    }
  }, 60_000);

  it('with TRUST_PROXY=127.0.0.1: X-Forwarded-For clients are limited separately, valid keys pass, an untrusted peer’s X-Forwarded-For is ignored, and proxied clients have their own connection slots', async () => {
    const t = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'none',
        TRUST_PROXY: '127.0.0.1',
        AUTH_FAILURES_PER_MINUTE: '5',
        HTTP_MAX_CONNECTIONS_PER_ADDRESS: '3',
      },
    });
    const streams: OpenStream[] = [];
    try {
      const other = await t.newTenant('behind-proxy');
      // Client 203.0.113.1 behind the proxy goes over its budget.
      const one = await failUntilRefused(t, '127.0.0.1', 5, () => '203.0.113.1');
      expectRefusal(one.refused, /from this address \(limit 5 per minute\)/);
      expectRefusal(await get(t, '127.0.0.1', bad(100), '203.0.113.1'), /from this address/);
      // Its valid key passes; another client behind the same proxy is not affected.
      expect((await get(t, '127.0.0.1', other.apiKey, '203.0.113.1')).status).toBe(200);
      expect((await get(t, '127.0.0.1', bad(101), '203.0.113.2')).status).toBe(401);
      // The proxy's own chain: the client is the last untrusted hop.
      expect((await get(t, '127.0.0.1', bad(102), '203.0.113.1, 127.0.0.1')).status).toBe(429);

      // 127.0.0.2 is not a trusted proxy: its X-Forwarded-For is ignored, so changing it on
      // every request does not escape the peer's own budget.
      const spoof = await failUntilRefused(t, '127.0.0.2', 5, (i) => `198.51.100.${i + 1}`);
      expectRefusal(spoof.refused, /from this address/);
      expectRefusal(await get(t, '127.0.0.2', bad(200), '198.51.100.200'), /from this address/);
      expect((await get(t, '127.0.0.2', other.apiKey, '198.51.100.200')).status).toBe(200);

      // Connection slots per client behind the proxy: 3 open streams of 203.0.113.9 use its 3;
      // its next request is 429, another client's is served, and the proxy (4+ connections)
      // is never cut.
      const agent = await other.client.beta.agents.create({
        name: 'p',
        model: 'claude-sonnet-4-5',
      });
      const env = await other.client.beta.environments.create({ name: 'p' });
      const s = await other.client.beta.sessions.create({
        agent: agent.id,
        environment_id: env.id,
      });
      for (let i = 0; i < 3; i++) {
        const st = await streamFrom('127.0.0.1', `${t.url}/v1/sessions/${s.id}/events/stream`, {
          key: other.apiKey,
          headers: { 'x-forwarded-for': '203.0.113.9' },
        });
        streams.push(st);
        expect(st.status).toBe(200);
      }
      const over = await get(t, '127.0.0.1', other.apiKey, '203.0.113.9');
      expectRefusal(
        over,
        /requests in flight from this client address \(limit 3, HTTP_MAX_CONNECTIONS_PER_ADDRESS\)/,
      );
      expect((await get(t, '127.0.0.1', other.apiKey, '203.0.113.10')).status).toBe(200);
      streams.pop()!.close();
      await new Promise((r) => setTimeout(r, 200));
      expect((await get(t, '127.0.0.1', other.apiKey, '203.0.113.9')).status).toBe(200);
    } finally {
      for (const st of streams) st.close();
      await t.close();
    }
  }, 60_000);

  it('the global budget engages for a guesser spread over many addresses; valid keys still pass', async () => {
    const t = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'none',
        TRUST_PROXY: '127.0.0.1',
        AUTH_FAILURES_PER_MINUTE: '1000',
        AUTH_FAILURES_GLOBAL_PER_MINUTE: '10',
      },
    });
    try {
      const other = await t.newTenant('global');
      // One failure per client address: no address is near its own budget.
      const { refused } = await failUntilRefused(t, '127.0.0.1', 10, (i) => `192.0.2.${i + 1}`);
      expectRefusal(refused, /from all addresses \(limit 10 per minute\)/);
      expectRefusal(await get(t, '127.0.0.3', bad(300)), /from all addresses/);
      expect((await get(t, '127.0.0.1', other.apiKey, '192.0.2.99')).status).toBe(200);
      expect((await get(t, '127.0.0.3', t.operatorKey)).status).toBe(200);
    } finally {
      await t.close();
    }
  }, 60_000);
});
