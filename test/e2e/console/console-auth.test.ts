/**
 * Console key sign-in and the af_console cookie, through HTTP (core/src/console/console.ts,
 * gateway/src/consoleAuth.ts, gateway/src/routes/console.ts): the cookie's attributes, the
 * cookie on REST and GraphQL, CSRF on writes, sign-out and sign-out everywhere, tampering,
 * and no secret in any answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(() => t?.close());

const bodies: string[] = [];
async function signIn(key: string) {
  const res = await t.http('/v1/svc/console/session', {
    method: 'POST',
    key: null,
    json: { api_key: key },
  });
  const text = await res.text();
  bodies.push(text);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { res, body: JSON.parse(text), setCookie, cookie: setCookie.split(';')[0]! };
}
async function withCookie(
  cookie: string,
  path: string,
  init: RequestInit & { json?: unknown } = {},
) {
  const res = await t.http(path, {
    ...init,
    key: null,
    headers: { ...BETA, cookie, ...(init.headers as Record<string, string>) },
  });
  bodies.push(await res.clone().text());
  return res;
}

describe('console key sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax, Path=/ cookie (no Secure on http) and /me answers with it', async () => {
    const s = await signIn(t.operatorKey);
    expect(s.res.status).toBe(200);
    expect(s.setCookie).toMatch(/^af_console=[^;]+; /);
    expect(s.setCookie).toContain('HttpOnly');
    expect(s.setCookie).toContain('SameSite=Lax');
    expect(s.setCookie).toContain('Path=/');
    expect(s.setCookie).not.toContain('Secure');
    expect(s.body).toMatchObject({ operator: true, role: 'admin', tenant: { id: 'tnt_default' } });
    const me = await withCookie(s.cookie, '/v1/svc/console/me');
    expect(me.status).toBe(200);
    expect(((await me.json()) as { csrf_token: string }).csrf_token).toBe(s.body.csrf_token);
  });

  it("a tenant API key signs in as that tenant's admin, and the cookie sees only that tenant", async () => {
    const other = await t.newTenant('console-tenant');
    const s = await signIn(other.apiKey);
    expect(s.res.status).toBe(200);
    expect(s.body).toMatchObject({
      operator: false,
      role: 'admin',
      tenant: { name: 'console-tenant' },
    });
    const list = await withCookie(s.cookie, '/v1/agents');
    expect(list.status).toBe(200);
    expect(list.headers.get('anthropic-workspace-id')).toBe(s.body.tenant.id);
    expect(s.body.tenant.id).not.toBe('tnt_default');
  });

  it('a bad key is 401 and sets no cookie', async () => {
    const s = await signIn('afk_not-a-key');
    expect(s.res.status).toBe(401);
    expect(s.setCookie).toBe('');
  });

  it('a cookie write needs x-csrf-token: 403 without, 200 with', async () => {
    const s = await signIn(t.operatorKey);
    const agent = { name: 'console-made', model: 'claude-sonnet-4-5' };
    const bare = await withCookie(s.cookie, '/v1/agents', { method: 'POST', json: agent });
    expect(bare.status).toBe(403);
    expect(await bare.text()).toContain('x-csrf-token');
    const ok = await withCookie(s.cookie, '/v1/agents', {
      method: 'POST',
      json: agent,
      headers: { 'x-csrf-token': s.body.csrf_token },
    });
    expect(ok.status).toBe(200);
    expect((await withCookie(s.cookie, '/v1/agents')).status).toBe(200);
  });

  it('the cookie works on a GraphQL query (with the CSRF token on POST)', async () => {
    const s = await signIn(t.operatorKey);
    const res = await withCookie(s.cookie, '/graphql', {
      method: 'POST',
      json: { query: '{ agents { __typename } }' },
      headers: { 'x-csrf-token': s.body.csrf_token },
    });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).not.toContain('errors');
  });

  it('sign_out revokes the cookie; sign_out_everywhere revokes every cookie of the principal', async () => {
    const a = await signIn(t.operatorKey);
    const out = await withCookie(a.cookie, '/v1/svc/console/sign_out', {
      method: 'POST',
      headers: { 'x-csrf-token': a.body.csrf_token },
    });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await withCookie(a.cookie, '/v1/svc/console/me')).status).toBe(401);

    const b = await signIn(t.operatorKey);
    const c = await signIn(t.operatorKey);
    const all = await withCookie(b.cookie, '/v1/svc/console/sign_out_everywhere', {
      method: 'POST',
      headers: { 'x-csrf-token': b.body.csrf_token },
    });
    expect(all.status).toBe(200);
    expect((await withCookie(c.cookie, '/v1/svc/console/me')).status).toBe(401);
    expect((await withCookie(b.cookie, '/v1/svc/console/me')).status).toBe(401);
  });

  it('a tampered cookie is 401', async () => {
    const s = await signIn(t.operatorKey);
    const v = s.cookie.slice('af_console='.length);
    const flipped = v.slice(0, -3) + (v.endsWith('AAA') ? 'BBB' : 'AAA');
    expect((await withCookie(`af_console=${flipped}`, '/v1/svc/console/me')).status).toBe(401);
    expect((await withCookie('af_console=garbage', '/v1/agents')).status).toBe(401);
  });

  it('no answer carried the operator key', () => {
    expect(bodies.length).toBeGreaterThan(5);
    for (const b of bodies) expect(b).not.toContain(t.operatorKey);
  });
});
