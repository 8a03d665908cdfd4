// The console's only way to the platform: same-origin fetch with the af_console cookie (never a
// key kept in browser storage). Every write carries x-csrf-token from /v1/svc/console/me.
import { createClient, type Client } from 'graphql-sse';

export type Me = {
  user: { id: string; email: string; name: string } | null;
  operator: boolean;
  tenant: { id: string; name: string };
  role: 'admin' | 'member' | 'viewer';
  csrf_token: string;
  expires_at: string;
};

let csrf = '';
export function setCsrf(token: string): void {
  csrf = token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function rest<T>(
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<T> {
  const method = init.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiError(res.status, body?.error?.message ?? `HTTP ${res.status}`);
  return body as T;
}

export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const body = await rest<{ data?: T; errors?: Array<{ message: string }> }>('/graphql', {
    method: 'POST',
    json: { query, variables },
  });
  if (body.errors?.length) throw new ApiError(400, body.errors.map((e) => e.message).join('; '));
  return body.data as T;
}

let sse: Client | null = null;
/** graphql-sse client on /graphql/stream, same-origin cookie plus the CSRF header. */
export function sseClient(): Client {
  sse ??= createClient({
    url: '/graphql/stream',
    credentials: 'same-origin',
    headers: () => ({ 'x-csrf-token': csrf }),
  });
  return sse;
}

export function resetSse(): void {
  sse?.dispose();
  sse = null;
}
