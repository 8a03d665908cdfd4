// The console's only way to the platform: same-origin fetch with the af_console cookie (never a
// key kept in browser storage). Every write carries x-csrf-token from /v1/svc/console/me.
import { createClient, type Client } from 'graphql-sse';

export type Me = {
  user: { id: string; email: string; name: string } | null;
  operator: boolean;
  tenant: { id: string; name: string };
  role: 'admin' | 'member' | 'viewer';
  csrf_token: string;
  memberships?: Array<{ tenant_id: string; tenant_name: string; role: string }>;
  expires_at: string;
};

export const BETA = 'managed-agents-2026-04-01';

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
  // The beta header opens the `svc` extension routes (model cards, keys, webhooks); others ignore it.
  const headers: Record<string, string> = { accept: 'application/json', 'anthropic-beta': BETA };
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

/** A multipart POST through XMLHttpRequest, which reports upload progress (fetch does not). */
export function upload<T>(
  path: string,
  body: FormData,
  onProgress: (fraction: number) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('anthropic-beta', BETA);
    if (csrf) xhr.setRequestHeader('x-csrf-token', csrf);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new ApiError(0, 'network error during upload'));
    xhr.onload = () => {
      let parsed: { error?: { message?: string } } | null = null;
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        parsed = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(parsed as T);
      } else reject(new ApiError(xhr.status, parsed?.error?.message ?? `HTTP ${xhr.status}`));
    };
    xhr.send(body);
  });
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
