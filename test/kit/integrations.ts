/**
 * Integration test steps shared by test/e2e/integrations: an OAuth install driven as a browser
 * would (the install URL, the provider fixture's authorize redirect, the platform's callback),
 * and signed webhook posts to the platform.
 */
import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';
import { expect } from 'vitest';
import { BETA, type TestPlatform } from './harness.js';

/** What the platform is told its public origin is; callbacks are rewritten to the test platform. */
export const PUBLIC_URL = 'https://agents.example';

/** Runs install → provider authorize (the fixture approves) → callback; returns the callback page. */
export async function installByOAuth(
  t: TestPlatform,
  id: string,
  fixtureCertFile: string,
  opts: { key?: string; rewrite?: (callback: URL) => URL } = {},
): Promise<{ status: number; page: string; callback: URL }> {
  const start = await t.http(`/v1/svc/integrations/${id}/install`, {
    headers: BETA,
    ...(opts.key ? { key: opts.key } : {}),
  });
  expect(start.status, await start.clone().text()).toBe(200);
  const { url } = (await start.json()) as { url: string };
  const dispatcher = new Agent({ connect: { ca: readFileSync(fixtureCertFile) } });
  try {
    const authorize = await undiciFetch(url, { redirect: 'manual', dispatcher });
    expect(authorize.status).toBe(302);
    let callback = new URL(authorize.headers.get('location')!);
    expect(callback.origin + callback.pathname).toBe(
      `${PUBLIC_URL}/v1/svc/integrations/${id}/callback`,
    );
    if (opts.rewrite) callback = opts.rewrite(callback);
    const res = await t.http(`${callback.pathname}${callback.search}`, { key: null });
    return { status: res.status, page: await res.text(), callback };
  } finally {
    await dispatcher.close();
  }
}

/** Posts a signed webhook request as the provider would (no API key). */
export async function postWebhook(
  t: TestPlatform,
  path: string,
  signed: { headers: Record<string, string>; body: string },
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: signed.headers,
    body: signed.body,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers };
}

/** A JSON answer of the platform's API (beta header, the operator key unless `init.key`). */
export async function apiJson(
  t: TestPlatform,
  path: string,
  init: Parameters<TestPlatform['http']>[1] = {},
): Promise<{ status: number; body: any }> {
  const res = await t.http(path, { headers: BETA, ...init });
  return { status: res.status, body: (await res.json()) as any };
}

/** The sessions an integration started for conversation `key` (their `metadata.thread`). */
export async function sessionsOfThread(t: TestPlatform, key: string): Promise<any[]> {
  const page = await t.client.beta.sessions.list({ limit: 100 });
  return page.data.filter((s: any) => s.metadata?.thread === key);
}
