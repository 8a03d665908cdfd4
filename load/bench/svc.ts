/**
 * Plain HTTP to the bench platform for the sections that need headers of their own: a request
 * with exactly the given headers (webhooks, the OAuth callback) and the extension endpoints'
 * operator key + beta header.
 */
import http from 'node:http';
import type { BenchPlatform } from './context.js';

/** The beta header the extension endpoints require (test/kit/harness.ts BETA). */
const BETA = 'managed-agents-2026-04-01';
const TIMEOUT_MS = 20_000;

/** The operator key and the beta header of the extension endpoints. */
export const svcHeaders = (p: BenchPlatform): Record<string, string> => ({
  'x-api-key': p.apiKey,
  'anthropic-beta': BETA,
});

/** A request to the platform with the given headers only (webhooks, the OAuth callback). */
export function request(
  p: BenchPlatform,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; text: string }> {
  const u = new URL(p.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent: p.agent, host: u.hostname, port: u.port, method, path, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The extension endpoints (/v1/svc/…): operator key and the beta header; a non-200 throws. */
export async function svc(p: BenchPlatform, method: string, path: string, body?: unknown) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const r = await request(
    p,
    method,
    path,
    { ...svcHeaders(p), ...(payload ? { 'content-type': 'application/json' } : {}) },
    payload,
  );
  if (r.status !== 200) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.text}`);
  return JSON.parse(r.text) as any;
}
