/**
 * core/src/mcp/oauthScrub.ts: what a captured token endpoint or MCP server answer keeps.
 * Credential-looking JSON values (any depth), form pairs and the known secrets are replaced;
 * the excerpt is truncated with `body_truncated` set.
 */
import { describe, expect, it } from 'vitest';
import { BODY_EXCERPT_CHARS, captureResponse, scrubText } from '../src/mcp/oauthScrub.js';

describe('oauthScrub', () => {
  it('replaces credential-looking JSON values at any depth and keeps the rest', () => {
    const out = scrubText(
      JSON.stringify({
        error: 'invalid_grant',
        access_token: 'a1',
        nested: { refresh_token: 'r1', client_secret: 's1', list: [{ id_token: 'i1' }] },
        code: 'c1',
      }),
      [],
    );
    expect(JSON.parse(out)).toEqual({
      error: 'invalid_grant',
      access_token: '[redacted]',
      nested: {
        refresh_token: '[redacted]',
        client_secret: '[redacted]',
        list: [{ id_token: '[redacted]' }],
      },
      code: '[redacted]',
    });
  });

  it('replaces form pairs, JSON-ish pairs in text, and every known secret anywhere', () => {
    const text =
      'error=bad&refresh_token=r2&x=1 {"access_token": "a2"} the token known-secret-1 leaked';
    const out = scrubText(text, ['known-secret-1', undefined, 'abc']);
    for (const s of ['r2', 'a2', 'known-secret-1']) expect(out).not.toContain(s);
    expect(out).toContain('error=bad');
    expect(out).toContain('x=1');
  });

  it('captures status, content type and a truncated excerpt', async () => {
    const long = `${'x'.repeat(BODY_EXCERPT_CHARS + 10)}`;
    const c = await captureResponse(
      new Response(long, { status: 400, headers: { 'content-type': 'text/plain' } }),
      [],
    );
    expect(c).toMatchObject({ status_code: 400, content_type: 'text/plain', body_truncated: true });
    expect(c.body.length).toBe(BODY_EXCERPT_CHARS);
  });
});
