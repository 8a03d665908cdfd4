/**
 * Semantics every ModelProvider adapter must pass (core/src/models/port.ts), against the
 * scripted model server (test/kit/fixtures/scriptedModel.ts) speaking the adapter's wire protocol:
 * streamed text, thinking and tool use as strictly sequential normalized blocks; usage and stop
 * reasons; auth and custom headers at the configured base URL; speed fast (and its refusal
 * before any request where unsupported); HTTP, network and mid-stream errors mapped to the
 * session.error kinds (ModelError, retryable or not, never carrying the key); abort (signal
 * mid-stream or before, and a consumer that stops early) closing the connection.
 *
 * Run for both adapters by core/test/modelProvider.test.ts; the adapter descriptor supplies
 * what is protocol-specific (where the request goes, how auth and fast mode look on the wire).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BetaManagedAgentsSessionErrorEvent } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import {
  ModelError,
  UnsupportedModelFeatureError,
  type ModelErrorKind,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
} from '../src/models/port.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../test/kit/fixtures/scriptedModel.js';

export const KEY = 'sk-test-very-secret-key-123';

/** Type-checked (npx tsc -p test/tsconfig.json): every ModelError kind is a session.error type the official SDK knows. */
type SessionErrorType = BetaManagedAgentsSessionErrorEvent['error']['type'];
export const errorKindsAreSessionErrorTypes: [ModelErrorKind] extends [SessionErrorType]
  ? true
  : never = true;

export interface ProviderOptions {
  apiKey?: string;
  baseUrl?: string;
  customHeaders?: Record<string, string>;
  supportsFast?: boolean;
}

type RecordedRequest = ScriptedModelServer['requests'][number];

export interface ModelProviderUnderTest {
  name: string;
  /** The provider under test, talking to `server` unless `options.baseUrl` says otherwise. */
  make(server: ScriptedModelServer, options: ProviderOptions): ModelProvider;
  /** A base URL that mounts the API under `prefix` on the server, and the path a request then hits. */
  mountedAt(server: ScriptedModelServer, prefix: string): { baseUrl: string; path: string };
  /** Asserts the request carried `key` the protocol's way. */
  expectAuth(headers: RecordedRequest['headers'], key: string): void;
  /** Asserts how a speed-fast request and a standard one look on the wire. */
  expectFast(fast: RecordedRequest, standard: RecordedRequest): void;
  /** Whether thinking blocks carry the upstream signature. */
  carriesThinkingSignature: boolean;
}

let modelSeq = 0;
const freshModel = () => `contract-model-${process.pid}-${++modelSeq}`;
export function req(model: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model,
    maxTokens: 1000,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    ...extra,
  };
}
export async function collect(p: ModelProvider, r: ModelRequest): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const e of p.stream(r)) out.push(e);
  return out;
}
export async function failure(
  p: ModelProvider,
  r: ModelRequest,
): Promise<{ events: ModelStreamEvent[]; error: any }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const e of p.stream(r)) events.push(e);
  } catch (error) {
    return { events, error };
  }
  throw new Error(`expected the stream to fail; got ${JSON.stringify(events)}`);
}
export const of = <T extends ModelStreamEvent['type']>(events: ModelStreamEvent[], type: T) =>
  events.filter((e): e is Extract<ModelStreamEvent, { type: T }> => e.type === type);

export function modelProviderContract(adapter: ModelProviderUnderTest): void {
  describe(`ModelProvider contract: ${adapter.name} against the scripted model server`, () => {
    let server: ScriptedModelServer;
    beforeAll(async () => {
      server = await startScriptedModelServer();
    });
    afterAll(async () => {
      await server.close();
    });
    const make = (o: ProviderOptions = {}) => adapter.make(server, { apiKey: KEY, ...o });
    const lastRequest = (model: string) => {
      const hits = server.requests.filter((r) => r.model === model);
      return hits[hits.length - 1]!;
    };

    it('streams text as deltas that concatenate to text_end', async () => {
      const model = freshModel();
      server.script(model, { steps: [{ text: 'Hello, streaming wörld! 🎉', chunks: 4 }] });
      const events = await collect(make(), req(model));
      expect(events.map((e) => e.type)).toEqual([
        'message_start',
        'text_start',
        'text_delta',
        'text_delta',
        'text_delta',
        'text_delta',
        'text_end',
        'message_end',
      ]);
      expect(
        of(events, 'text_delta')
          .map((e) => e.text)
          .join(''),
      ).toBe('Hello, streaming wörld! 🎉');
      expect(of(events, 'text_end')[0].text).toBe('Hello, streaming wörld! 🎉');
      expect(of(events, 'message_end')[0].stop_reason).toBe('end_turn');
    });

    it('streams thinking before text', async () => {
      const model = freshModel();
      server.script(model, {
        steps: [
          { thinking: 'Let me think about this.', signature: 'sig-abc' },
          { text: 'Answer.' },
        ],
      });
      const events = await collect(make(), req(model, { effort: 'medium' }));
      const types = events.map((e) => e.type);
      expect(types.indexOf('thinking_end')).toBeLessThan(types.indexOf('text_start'));
      expect(
        of(events, 'thinking_delta')
          .map((e) => e.thinking)
          .join(''),
      ).toBe('Let me think about this.');
      const end = of(events, 'thinking_end')[0];
      expect(end.thinking).toBe('Let me think about this.');
      // Anthropic carries the signature; chat completions has none.
      expect(end.signature).toBe(adapter.carriesThinkingSignature ? 'sig-abc' : undefined);
      expect(of(events, 'text_end')[0].text).toBe('Answer.');
    });

    it('streams tool_use input in fragments and parses it at the end, blocks strictly sequential', async () => {
      const model = freshModel();
      const input = {
        city: 'Paris',
        days: [1, 2],
        opts: { unit: 'C', note: 'quote " and \\ slash' },
      };
      server.script(model, {
        steps: [
          { text: 'Checking.' },
          { tool_use: { id: 'tool_1', name: 'weather', input } },
          { tool_use: { name: 'noop', input: {} } },
        ],
      });
      const events = await collect(make(), req(model));
      expect(events.map((e) => e.type).filter((t) => !t.endsWith('_delta'))).toEqual([
        'message_start',
        'text_start',
        'text_end',
        'tool_use_start',
        'tool_use_end',
        'tool_use_start',
        'tool_use_end',
        'message_end',
      ]);
      const starts = of(events, 'tool_use_start');
      expect(starts[0]).toEqual({ type: 'tool_use_start', id: 'tool_1', name: 'weather' });
      const fragments = of(events, 'tool_use_delta').filter((e) => e.id === 'tool_1');
      expect(fragments.length).toBeGreaterThanOrEqual(2);
      expect(fragments.map((e) => e.partial_json).join('')).toBe(JSON.stringify(input));
      const ends = of(events, 'tool_use_end');
      expect(ends[0]).toEqual({ type: 'tool_use_end', id: 'tool_1', name: 'weather', input });
      expect(ends[1]).toMatchObject({ name: 'noop', input: {} });
      expect(ends[1].id).toBe(starts[1].id);
      expect(ends[1].id).not.toBe('');
      expect(of(events, 'message_end')[0].stop_reason).toBe('tool_use');
    });

    it('maps usage (cached prompt tokens reported separately)', async () => {
      const model = freshModel();
      server.script(model, {
        steps: [{ text: 'x' }],
        usage: { input_tokens: 120, output_tokens: 7, cache_read_input_tokens: 30 },
      });
      const events = await collect(make(), req(model));
      expect(of(events, 'message_end')[0].usage).toEqual({
        input_tokens: 120,
        output_tokens: 7,
        cache_read_input_tokens: 30,
        cache_creation_input_tokens: 0,
      });
    });

    it.each(['end_turn', 'max_tokens', 'refusal', 'tool_use'] as const)(
      'maps stop reason %s',
      async (stop) => {
        const model = freshModel();
        server.script(model, { steps: [{ text: 'x' }], stop_reason: stop });
        const events = await collect(make(), req(model));
        expect(of(events, 'message_end')[0].stop_reason).toBe(stop);
      },
    );

    it('sends auth and custom headers to the configured base URL', async () => {
      const model = freshModel();
      const { baseUrl, path } = adapter.mountedAt(server, '/gateway');
      await collect(make({ baseUrl, customHeaders: { 'X-Tenant': 'tenant-7' } }), req(model));
      const r = lastRequest(model);
      expect(r.path).toBe(path);
      expect(r.headers['x-tenant']).toBe('tenant-7');
      expect(r.headers['content-type']).toBe('application/json');
      adapter.expectAuth(r.headers, KEY);
      expect(r.body.stream).toBe(true);
    });

    it('maps speed fast into the request and leaves standard requests untouched', async () => {
      const model = freshModel();
      const p = make({ customHeaders: { 'anthropic-beta': 'other-beta' } });
      await collect(p, req(model, { speed: 'fast' }));
      const fast = lastRequest(model);
      await collect(p, req(model, { speed: 'standard' }));
      const std = lastRequest(model);
      adapter.expectFast(fast, std);
    });

    it('rejects speed fast on a provider without fast support before any request', async () => {
      const model = freshModel();
      const p = make({ supportsFast: false });
      await expect(collect(p, req(model, { speed: 'fast' }))).rejects.toBeInstanceOf(
        UnsupportedModelFeatureError,
      );
      expect(server.requests.filter((r) => r.model === model)).toHaveLength(0);
      await collect(p, req(model)); // the same provider still serves standard requests
      expect(server.requests.filter((r) => r.model === model)).toHaveLength(1);
    });

    it.each([
      [529, 'overloaded_error', 'model_overloaded_error', true],
      [503, 'overloaded_error', 'model_overloaded_error', true],
      [429, 'rate_limit_error', 'model_rate_limited_error', true],
      [402, 'billing_error', 'billing_error', false],
      [429, 'insufficient_quota', 'billing_error', false],
      [400, 'invalid_request_error', 'model_request_failed_error', false],
      [401, 'authentication_error', 'model_request_failed_error', false],
      [500, 'api_error', 'model_request_failed_error', true],
    ] as const)('maps HTTP %i %s to %s', async (status, type, kind, retryable) => {
      const model = freshModel();
      server.script(model, {
        steps: [{ http_error: { status, type, message: `upstream says no (key ${KEY})` } }],
      });
      const { events, error } = await failure(make(), req(model));
      expect(events).toEqual([]);
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ kind, retryable, status });
      expect(error.message).toContain(String(status));
      expect(error.message).toContain('upstream says no');
      expect(error.message).not.toContain(KEY);
    });

    it('maps a network failure to a retryable request failure', async () => {
      const probe = http.createServer();
      await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
      const port = (probe.address() as AddressInfo).port;
      await new Promise<void>((r) => probe.close(() => r()));
      const { error } = await failure(make({ baseUrl: `http://127.0.0.1:${port}` }), req('m'));
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ kind: 'model_request_failed_error', retryable: true });
    });

    it.each([
      ['overloaded_error', 'model_overloaded_error', true],
      ['rate_limit_error', 'model_rate_limited_error', true],
      ['api_error', 'model_request_failed_error', true],
      ['invalid_request_error', 'model_request_failed_error', false],
    ] as const)('maps a mid-stream %s error event to %s', async (type, kind, retryable) => {
      const model = freshModel();
      server.script(model, {
        steps: [{ text: 'partial answer' }, { stream_error: { type, message: 'went wrong' } }],
      });
      const { events, error } = await failure(make(), req(model));
      expect(
        of(events, 'text_delta')
          .map((e) => e.text)
          .join(''),
      ).toBe('partial answer');
      expect(of(events, 'message_end')).toHaveLength(0);
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ kind, retryable });
      expect(error.message).toContain('went wrong');
    });

    it('aborts mid-delay: the iterator rejects with AbortError while the server still delays, and the server sees the disconnect', async () => {
      const model = freshModel();
      server.script(model, {
        steps: [{ text: 'before' }, { delay_ms: 20_000 }, { text: 'after' }],
      });
      const ac = new AbortController();
      const before = server.aborted;
      const it = make()
        .stream(req(model, { signal: ac.signal }))
        [Symbol.asyncIterator]();
      const seen: ModelStreamEvent[] = [];
      while (!seen.some((e) => e.type === 'text_delta')) seen.push((await it.next()).value);
      let pending: Promise<unknown> = it.next();
      // Drain whatever was already buffered before the delay; the next read must be blocked.
      for (;;) {
        const raced = await Promise.race([
          pending,
          new Promise((r) => setTimeout(() => r('blocked'), 150)),
        ]);
        if (raced === 'blocked') break;
        const r = raced as IteratorResult<ModelStreamEvent>;
        if (!r.done) seen.push(r.value);
        pending = it.next();
      }
      ac.abort();
      // rejected while the server still holds its 20 s delay: nothing after it was ever read
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      expect(
        of(seen, 'text_delta')
          .map((e) => e.text)
          .join(''),
      ).toBe('before');
      await vi.waitFor(() => expect(server.aborted).toBe(before + 1), { timeout: 2000 });
    });

    it('rejects with AbortError when the signal is already aborted', async () => {
      const ac = new AbortController();
      ac.abort();
      await expect(collect(make(), req(freshModel(), { signal: ac.signal }))).rejects.toMatchObject(
        { name: 'AbortError' },
      );
    });

    it('closes the connection when the consumer stops iterating early', async () => {
      const model = freshModel();
      server.script(model, { steps: [{ text: 'one' }, { delay_ms: 20_000 }, { text: 'two' }] });
      const before = server.aborted;
      for await (const e of make().stream(req(model))) if (e.type === 'text_delta') break;
      await vi.waitFor(() => expect(server.aborted).toBe(before + 1), { timeout: 2000 });
    });
  });
}
