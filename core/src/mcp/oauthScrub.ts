/**
 * Captured HTTP answers (a token endpoint's refusal, an MCP server's rejection) with every
 * sensitive value scrubbed, for the SDK's BetaManagedAgentsRefreshHTTPResponse. Guarantees:
 * - the known secrets passed in (access, refresh tokens, client secret) never survive, wherever
 *   they appear in the body;
 * - in a JSON body, the value of any key that looks like a credential (`*token*`, `*secret*`,
 *   `password`, `code`, `assertion`) is replaced, at any depth; in form/text bodies, the
 *   `name=value` and `"name": "value"` forms of those keys are replaced too;
 * - at most BODY_EXCERPT_CHARS characters are kept (`body_truncated` says so); at most
 *   READ_LIMIT_BYTES are read from the wire.
 * Proved by test/e2e/mcp/mcp-proxy-oauth.test.ts ("refresh failure: … recorded and scrubbed") and
 * test/e2e/mcp/mcp-proxy-validate.test.ts ("a refresh that fails: invalid, …").
 */
import type { CapturedHttpResponse } from './oauthTypes.js';

export const BODY_EXCERPT_CHARS = 2048;
const READ_LIMIT_BYTES = 64 * 1024;
const REDACTED = '[redacted]';
const SENSITIVE_KEY = /token|secret|password|^code$|assertion/i;
const FORM_PAIR = /\b([A-Za-z_]*(?:token|secret|password|assertion)[A-Za-z_]*)=([^&\s"]+)/gi;
const JSON_PAIR =
  /("[A-Za-z_]*(?:token|secret|password|assertion)[A-Za-z_]*"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;

function scrubJson(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(scrubJson);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [
        k,
        SENSITIVE_KEY.test(k) && x !== null && typeof x !== 'object' ? REDACTED : scrubJson(x),
      ]),
    );
  return v;
}

/** `text` with credential-looking values and every one of `secrets` replaced. */
export function scrubText(text: string, secrets: Array<string | undefined>): string {
  let out = text;
  try {
    out = JSON.stringify(scrubJson(JSON.parse(text)));
  } catch {
    out = out.replace(FORM_PAIR, `$1=${REDACTED}`).replace(JSON_PAIR, `$1"${REDACTED}"`);
  }
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join(REDACTED);
  return out;
}

/** Reads at most READ_LIMIT_BYTES of a response body (the rest is cancelled). */
async function readLimited(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < READ_LIMIT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, READ_LIMIT_BYTES).toString('utf8');
}

/** The scrubbed, truncated capture of `res` (its body is consumed). */
export async function captureResponse(
  res: Response,
  secrets: Array<string | undefined>,
): Promise<CapturedHttpResponse> {
  const raw = await readLimited(res).catch(() => '');
  const body = scrubText(raw, secrets);
  return {
    status_code: res.status,
    content_type: res.headers.get('content-type') ?? '',
    body: body.slice(0, BODY_EXCERPT_CHARS),
    body_truncated: body.length > BODY_EXCERPT_CHARS,
  };
}
