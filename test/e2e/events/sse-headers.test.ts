/**
 * SSE responses carry the same X-RateLimit-* headers as JSON responses (gateway/src/sse.ts
 * writes the headers the rate-limit hook set, gateway/src/requestGuards.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('X-RateLimit-* on SSE', () => {
  it('the event stream answers with the rate-limit headers, like a JSON response', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'sse' });
    const a = await c.beta.agents.create({ name: 'sse', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    const json = await t.http(`/v1/sessions/${s.id}`);
    const limit = json.headers.get('x-ratelimit-limit');
    expect(limit).toMatch(/^\d+$/);
    const ac = new AbortController();
    const sse = await t.http(`/v1/sessions/${s.id}/events/stream`, { signal: ac.signal });
    try {
      expect(sse.headers.get('content-type')).toContain('text/event-stream');
      expect(sse.headers.get('x-ratelimit-limit')).toBe(limit);
      expect(sse.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
      expect(sse.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    } finally {
      ac.abort();
      await sse.body?.cancel().catch(() => {});
    }
  });
});
