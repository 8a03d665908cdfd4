/**
 * Shared adapter helpers for the model-provider port (core/src/models/port.ts), kept
 * beside the port so the protocol adapters (core/src/adapters/anthropic, core/src/adapters/openai)
 * share them without importing each other: the Server-Sent Events reader, and the HTTP
 * plumbing (POST for an event stream, upstream errors mapped to ModelError kinds, credential
 * redaction, JSON event and tool-input parsing). Proved by core/test/model-providers.shared.test.ts
 * (parseSSE, egress) and, through both adapters, core/test/modelProvider.contract.ts.
 *
 * parseSSE follows the WHATWG event-stream rules: lines end in CRLF, LF or CR (a CRLF split
 * across chunks counts once); UTF-8 may be split anywhere; a leading BOM is dropped; `:` lines
 * are comments; one space after the colon is stripped; `data:` lines join with "\n"; an event
 * is dispatched on a blank line only if it had at least one `data:` line; `id` is the last event
 * id seen so far (it persists across events, as in the spec); `retry` and unknown fields are
 * ignored. At end of stream a pending event whose lines were all complete is dispatched; a
 * trailing unterminated line is discarded (it may be truncated).
 */
import {
  ModelError,
  UnsupportedModelFeatureError,
  type ModelErrorKind,
  type ModelRequest,
  type ModelStreamEvent,
  type ProviderConfig,
} from './port.js';
import { STATUS_CODES } from 'node:http';
import { request as undiciRequest } from 'undici';
import { egressRefusalIn } from '../egress/policy.js';
import { readerOf, STOPPED, type ByteStream } from './byteStream.js';

export type { ByteStream } from './byteStream.js';

export interface SSEEvent {
  event: string | null;
  data: string;
  id: string | null;
}

/**
 * Yields events as they complete. Aborting `signal` cancels the body and makes the generator
 * throw an AbortError promptly; returning early (break) cancels the body too.
 */
export async function* parseSSE(
  body: ByteStream,
  signal?: AbortSignal,
  /** True once the decoder has read its protocol's last event (see ByteReader's finish). */
  complete?: () => boolean,
): AsyncGenerator<SSEEvent> {
  if (signal?.aborted) throw abortError(signal);
  const reader = readerOf(body);
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });

  const decoder = new TextDecoder('utf-8');
  const terminator = /[\r\n]/g;
  let buf = '';
  let skipLF = false; // the previous line ended in CR; a following LF belongs to it
  let eventType = '';
  let dataLines: string[] = [];
  let lastId: string | null = null;

  const takeLine = (line: string): SSEEvent | null => {
    if (line === '') {
      const hadData = dataLines.length > 0;
      const ev: SSEEvent = { event: eventType || null, data: dataLines.join('\n'), id: lastId };
      eventType = '';
      dataLines = [];
      return hadData ? ev : null;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') dataLines.push(value);
    else if (field === 'event') eventType = value;
    else if (field === 'id' && !value.includes('\0')) lastId = value;
    return null;
  };

  function* drain(): Generator<SSEEvent> {
    let pos = 0;
    while (pos < buf.length) {
      if (skipLF) {
        skipLF = false;
        if (buf[pos] === '\n') pos++;
        continue;
      }
      terminator.lastIndex = pos;
      const m = terminator.exec(buf);
      if (!m) break;
      const line = buf.slice(pos, m.index);
      skipLF = m[0] === '\r';
      pos = m.index + 1;
      const ev = takeLine(line);
      if (ev) yield ev;
    }
    buf = buf.slice(pos);
  }

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (signal?.aborted) throw abortError(signal);
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      yield* drain();
    }
    buf += decoder.decode();
    yield* drain();
    const last = takeLine('');
    if (last) yield last;
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await (complete?.() ? reader.finish() : reader.cancel(STOPPED)).catch(() => {});
    reader.releaseLock();
  }
}

/** The platform's abort error for `signal` (its reason when that is an AbortError). */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

// ---- HTTP helpers shared by the providers ----

/** Maps an upstream HTTP status and/or error type onto the port's error kinds. */
export function modelErrorFor(
  status: number | undefined,
  type: string | undefined,
  message: string,
): ModelError {
  const t = (type ?? '').toLowerCase();
  let kind: ModelErrorKind = 'model_request_failed_error';
  let retryable = false;
  if (status === 529 || t === 'overloaded_error' || t === 'overloaded') {
    kind = 'model_overloaded_error';
    retryable = true;
  } else if (status === 402 || t === 'billing_error' || t === 'insufficient_quota') {
    kind = 'billing_error';
  } else if (status === 429 || t === 'rate_limit_error' || t === 'rate_limit_exceeded') {
    kind = 'model_rate_limited_error';
    retryable = true;
  } else if (
    status === undefined
      ? t === 'api_error' || t === 'server_error' || t === 'timeout'
      : status === 408 || status === 409 || status >= 500
  ) {
    retryable = true;
  }
  return new ModelError(kind, message, status, retryable);
}

/** Extracts `{type, message}` from Anthropic-, OpenAI- or loosely-shaped error bodies. */
export function upstreamError(payload: unknown): { type?: string; message?: string } {
  if (!payload || typeof payload !== 'object') return {};
  const p = payload as Record<string, unknown>;
  const e = p.error;
  if (typeof e === 'string') return { message: e };
  if (e && typeof e === 'object') {
    const o = e as Record<string, unknown>;
    const code = typeof o.code === 'string' ? o.code : undefined;
    const type = typeof o.type === 'string' ? o.type : undefined;
    // OpenAI puts the specific reason in `code` (e.g. insufficient_quota under a 429).
    const specific =
      code === 'insufficient_quota' || code === 'rate_limit_exceeded' ? code : (type ?? code);
    return { type: specific, message: typeof o.message === 'string' ? o.message : undefined };
  }
  return { message: typeof p.message === 'string' ? p.message : undefined };
}

export interface PostStreamOptions {
  url: string;
  headers: Headers;
  /** The request body as JSON (the adapters' `…BodyBytes`, wireText.ts). */
  body: string | Uint8Array;
  apiKey: string;
  signal?: AbortSignal;
  /** Default: global fetch. A tenant's model card gets `egressFetch` (checked, pinned). */
  fetch?: (url: string, init?: RequestInit) => Promise<Response>;
}

/**
 * POSTs a JSON body and returns the response body stream of a 2xx reply. Non-2xx replies and
 * network failures become ModelErrors (never containing the API key); a destination the egress
 * policy refuses becomes a non-retryable ModelError naming base_url (before any connection);
 * aborts rethrow the platform's AbortError.
 */
export async function postForEventStream(o: PostStreamOptions): Promise<ByteStream> {
  o.headers.set('content-type', 'application/json');
  o.headers.set('accept', 'text/event-stream');
  if (!o.fetch) return post(o);
  let res: Response;
  try {
    res = await o.fetch(o.url, {
      method: 'POST',
      headers: o.headers,
      body: o.body,
      signal: o.signal,
      // As on the default path: a 3xx is the answer, and the key never goes to another address.
      redirect: 'manual',
    });
  } catch (err) {
    throw transportError(err, o.signal, o.apiKey);
  }
  if (res.ok && res.body) return res.body;
  let text = '';
  try {
    text = await res.text();
  } catch {
    if (o.signal?.aborted) throw abortError(o.signal);
  }
  throw httpError(res.status, text, res.statusText, o.apiKey);
}

/**
 * The default path: undici's `request` on its global keep-alive pool. It does what `fetch` did
 * here without the WHATWG Request, Response and stream objects (about a third of a model
 * call's client CPU, load/README.md). Neither path follows redirects: a base URL that
 * redirects gets the 3xx as an error, and its credentials never go to another address.
 */
async function post(o: PostStreamOptions): Promise<ByteStream> {
  let res: Awaited<ReturnType<typeof undiciRequest>>;
  try {
    res = await undiciRequest(o.url, {
      method: 'POST',
      headers: Object.fromEntries(o.headers),
      body: o.body,
      signal: o.signal,
    });
  } catch (err) {
    throw transportError(err, o.signal, o.apiKey);
  }
  if (res.statusCode >= 200 && res.statusCode < 300) return res.body;
  let text = '';
  try {
    text = await res.body.text();
  } catch {
    if (o.signal?.aborted) throw abortError(o.signal);
  }
  throw httpError(res.statusCode, text, STATUS_CODES[res.statusCode] ?? '', o.apiKey);
}

/** A non-2xx reply as the port's error: the upstream's type and message, the key redacted. */
function httpError(status: number, text: string, statusText: string, apiKey: string): ModelError {
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    payload = undefined;
  }
  const up = upstreamError(payload);
  const detail = up.message ?? (text.trim().slice(0, 500) || statusText);
  const msg = redact(
    `model request failed: HTTP ${status}${up.type ? ` ${up.type}` : ''}: ${detail}`,
    apiKey,
  );
  return modelErrorFor(status, up.type, msg);
}

/** Converts anything thrown while talking to the upstream into the error the port promises. */
export function transportError(
  err: unknown,
  signal: AbortSignal | undefined,
  apiKey: string,
): Error {
  if (signal?.aborted) return abortError(signal);
  if (err instanceof ModelError) return err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  const refused = egressRefusalIn(err);
  if (refused)
    return new ModelError(
      'model_request_failed_error',
      `model request refused: base_url ${refused.message}`,
      undefined,
      false,
    );
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  const base = err instanceof Error ? err.message : String(err);
  return new ModelError(
    'model_request_failed_error',
    redact(`model request failed: ${base}${cause}`, apiKey),
    undefined,
    true,
  );
}

/** Error for a stream that closed before its protocol's terminator. */
export function truncatedStreamError(): ModelError {
  return new ModelError(
    'model_request_failed_error',
    'model stream ended before the response completed',
    undefined,
    true,
  );
}

export function redact(text: string, secret: string): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

/** Values shorter than this are not treated as secrets (a header value `1` must not garble messages). */
const MIN_REDACTED_LENGTH = 6;

/**
 * Every error escaping a provider's stream names none of its credentials (API key, custom
 * header values), whichever path produced it: an HTTP error body, an error event mid-stream, a
 * transport failure. Upstreams that echo what they were sent cannot pass it on to session.error
 * events or logs. Tested in test/e2e/credentials/secrets-scan.test.ts (echoing provider turns).
 */
export async function* withCredentialsRedacted<T>(
  inner: AsyncIterable<T>,
  secrets: readonly string[],
): AsyncGenerator<T> {
  try {
    yield* inner;
  } catch (err) {
    throw redactError(err, secrets);
  }
}

function redactError(err: unknown, secrets: readonly string[]): unknown {
  if (!(err instanceof Error)) return err;
  const message = secrets
    .filter((s) => s.length >= MIN_REDACTED_LENGTH)
    .reduce((m, s) => redact(m, s), err.message);
  if (message === err.message) return err;
  if (err instanceof ModelError)
    return new ModelError(err.kind, message, err.status, err.retryable);
  err.message = message;
  return err;
}

export function parseJSONEvent(data: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(data);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ModelError(
    'model_request_failed_error',
    `malformed model stream event: ${data.slice(0, 200)}`,
    undefined,
    true,
  );
}

/** Parses accumulated tool-call arguments; empty means `{}`. Anything but an object is an error. */
export function parseToolInput(name: string, json: string): Record<string, unknown> {
  if (json.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(json);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ModelError(
    'model_request_failed_error',
    `tool call ${name}: arguments are not a JSON object`,
    undefined,
    true,
  );
}

/**
 * Headers that describe the connection or the body: the HTTP client owns them (a card's
 * custom_headers are refused with these names: core/src/models/models.ts).
 */
export const CONNECTION_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
]);
/**
 * Names a request's extra headers (a card's pi_config.headers) never set: the credentials, the
 * protocol's own headers and the ones the HTTP client owns.
 */
const PROTECTED_HEADERS = new Set([
  'authorization',
  'x-api-key',
  'api-key',
  'anthropic-version',
  'content-type',
  'accept',
  'cookie',
  ...CONNECTION_HEADERS,
]);

/** Whether a header name is one a card's pi_config.headers may not set. */
export const isProtectedHeader = (name: string) => PROTECTED_HEADERS.has(name.toLowerCase());

/**
 * A provider request's headers: the request's extra headers first (never a protected name, an
 * invalid one skipped), then the credentials, then the card's custom headers.
 */
export function providerHeaders(
  credentials: Record<string, string>,
  customHeaders: Record<string, string> | undefined,
  extra: Record<string, string> | undefined,
): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (PROTECTED_HEADERS.has(name.toLowerCase())) continue;
    try {
      headers.set(name, value);
    } catch {
      // not a valid header name or value: not sent
    }
  }
  for (const [name, value] of Object.entries(credentials)) headers.set(name, value);
  for (const [name, value] of Object.entries(customHeaders ?? {})) headers.set(name, value);
  return headers;
}

/**
 * A provider's stream with its credentials (the API key and every custom header value) redacted
 * from any error it throws; speed 'fast' refused before any network call where the endpoint
 * does not support it. Both adapters run their requests through this.
 */
export function providerStream(
  options: Pick<ProviderConfig, 'apiKey' | 'customHeaders'>,
  supportsFast: boolean,
  request: ModelRequest,
  run: (request: ModelRequest) => AsyncGenerator<ModelStreamEvent>,
): AsyncIterable<ModelStreamEvent> {
  async function* guarded(): AsyncGenerator<ModelStreamEvent> {
    if (request.speed === 'fast' && !supportsFast) {
      throw new UnsupportedModelFeatureError(
        `model ${request.model}: this provider does not support speed 'fast'`,
      );
    }
    yield* run(request);
  }
  return withCredentialsRedacted(guarded(), [
    options.apiKey,
    ...Object.values(options.customHeaders ?? {}),
  ]);
}
