/**
 * What both model-provider adapters share, beyond the port's contract (modelProvider.contract.ts,
 * run by modelProvider.test.ts): the scripted model server itself, the provider-id → protocol
 * table and createProvider (core/src/models/providers.ts), providers behind the egress
 * policy (a tenant model card's egressFetch), and the SSE reader
 * (core/src/models/providerHelpers.ts parseSSE).
 */
import { createServer } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AnthropicMessagesProvider } from '../src/models/anthropic/provider.js';
import { OpenAIChatProvider } from '../src/models/openai/provider.js';
import { createProvider } from '../src/models/providers.js';
import { providerProtocol } from '../src/models/protocols.js';
import { parseSSE, type ByteStream, type SSEEvent } from '../src/models/providerHelpers.js';
import { ModelError } from '../src/models/port.js';
import { startScriptedModelServer } from '../../test/kit/fixtures/scriptedModel.js';
import { createEgressPolicy, egressFetch } from '../src/egress/index.js';
import { collect, of, req } from './modelProvider.contract.js';
import {
  freshModel,
  KEY,
  scriptedServer,
  useScriptedModelServer,
} from './modelProvider.fixtures.js';

useScriptedModelServer();

describe('scripted server', () => {
  it('answers 401 with the protocol error body when the key is missing, and falls back to defaultText', async () => {
    const server = scriptedServer();
    const a = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ model: 'x', stream: true }),
    });
    expect(a.status).toBe(401);
    expect(await a.json()).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
    const o = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'x' }),
    });
    expect(o.status).toBe(401);
    expect(await o.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    const custom = await startScriptedModelServer({ defaultText: 'fallback reply' });
    try {
      const p = new OpenAIChatProvider({ apiKey: KEY, baseUrl: `${custom.url}/v1` });
      const events = await collect(p, req('unscripted'));
      expect(of(events, 'text_end')[0].text).toBe('fallback reply');
    } finally {
      await custom.close();
    }
  });

  it('rejects an http_error that is not the first step', () => {
    const server = scriptedServer();
    expect(() =>
      server.script('x', {
        steps: [{ text: 'a' }, { http_error: { status: 500, type: 'api_error', message: 'm' } }],
      }),
    ).toThrow();
  });
});

describe('providers', () => {
  it('maps provider ids to protocols', () => {
    expect(providerProtocol('anthropic')).toEqual({ protocol: 'anthropic', supportsFast: true });
    expect(providerProtocol('ant')).toEqual({ protocol: 'anthropic', supportsFast: true });
    expect(providerProtocol('ant-compatible')).toEqual({
      protocol: 'anthropic',
      supportsFast: false,
    });
    expect(providerProtocol('openai')).toEqual({ protocol: 'openai', supportsFast: true });
    expect(providerProtocol('oai')).toEqual({ protocol: 'openai', supportsFast: true });
    expect(providerProtocol('oai-compatible')).toEqual({ protocol: 'openai', supportsFast: false });
    expect(providerProtocol('openai-compatible')).toEqual({
      protocol: 'openai',
      supportsFast: false,
    });
    expect(providerProtocol('gemini')).toBeNull();
    expect(providerProtocol('toString')).toBeNull();
  });

  it('createProvider builds the provider for the protocol', () => {
    expect(createProvider({ protocol: 'anthropic', apiKey: 'k' })).toBeInstanceOf(
      AnthropicMessagesProvider,
    );
    expect(createProvider({ protocol: 'openai', apiKey: 'k' })).toBeInstanceOf(OpenAIChatProvider);
    expect(createProvider({ protocol: 'openai', apiKey: 'k' }).protocol).toBe('openai');
  });
});

describe('egress: a provider given egressFetch (a tenant model card)', () => {
  it.each(['anthropic', 'openai'] as const)(
    '%s: an unopened loopback base_url fails fast, non-retryable, naming base_url, never connecting',
    async (protocol) => {
      const server = scriptedServer();
      const f = egressFetch(createEgressPolicy());
      try {
        const before = server.requests.length;
        const p = createProvider({
          protocol,
          apiKey: KEY,
          baseUrl: protocol === 'anthropic' ? server.url : `${server.url}/v1`,
          fetch: f,
        });
        const err = await collect(p, req(freshModel())).catch((e) => e);
        expect(err).toBeInstanceOf(ModelError);
        expect(err).toMatchObject({ kind: 'model_request_failed_error', retryable: false });
        expect(err.message).toMatch(
          /^model request refused: base_url 127\.0\.0\.1 is a private or reserved address/,
        );
        expect(err.message).not.toContain(KEY);
        expect(server.requests.length).toBe(before);
      } finally {
        await f.close();
      }
    },
  );

  it.each(['anthropic', 'openai'] as const)(
    '%s: streams normally when the operator opened the host:port, with custom headers',
    async (protocol) => {
      const server = scriptedServer();
      const f = egressFetch(createEgressPolicy({ allowPrivateHosts: [new URL(server.url).host] }));
      try {
        const model = freshModel();
        server.script(model, { steps: [{ text: 'pinned and opened' }] });
        const p = createProvider({
          protocol,
          apiKey: KEY,
          baseUrl: protocol === 'anthropic' ? server.url : `${server.url}/v1`,
          customHeaders: { 'x-card': 'c1' },
          fetch: f,
        });
        const events = await collect(p, req(model));
        expect(events.find((e) => e.type === 'text_end')).toMatchObject({
          text: 'pinned and opened',
        });
        expect(server.requests.at(-1)!.headers['x-card']).toBe('c1');
      } finally {
        await f.close();
      }
    },
  );
});

describe('redirects are not followed (the default path and egressFetch)', () => {
  it.each([
    ['anthropic', false],
    ['openai', false],
    ['anthropic', true],
    ['openai', true],
  ] as const)(
    '%s (egressFetch: %s): a redirect is an HTTP error, and the target never sees the request or its key',
    async (protocol, viaEgress) => {
      const server = scriptedServer();
      const model = freshModel();
      server.script(model, { steps: [{ text: 'should not be reached' }] });
      const redirector = createServer((rq, rs) => {
        rq.resume();
        rs.writeHead(307, { location: `${server.url}${rq.url}` }).end();
      });
      await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
      const { port } = redirector.address() as { port: number };
      try {
        const before = server.requests.length;
        const base = `http://127.0.0.1:${port}`;
        const opened = [new URL(base).host, new URL(server.url).host];
        const f = viaEgress
          ? egressFetch(createEgressPolicy({ allowPrivateHosts: opened }))
          : undefined;
        const p = createProvider({
          protocol,
          apiKey: KEY,
          baseUrl: protocol === 'anthropic' ? base : `${base}/v1`,
          ...(f ? { fetch: f } : {}),
        });
        const err = await collect(p, req(model)).catch((e) => e);
        await f?.close();
        expect(err).toBeInstanceOf(ModelError);
        expect(err.message).toMatch(/^model request failed: HTTP 307: Temporary Redirect/);
        expect(err.message).not.toContain(KEY);
        expect(server.requests.length).toBe(before);
      } finally {
        redirector.close();
      }
    },
  );
});

describe('the default HTTP path: one kept-alive connection', () => {
  it.each(['anthropic', 'openai'] as const)(
    '%s: sequential requests reuse one connection (the end of each reply is read, not cut)',
    async (protocol) => {
      const upstream = scriptedServer();
      const model = freshModel();
      const texts = ['one', 'two', 'three', 'four'];
      upstream.script(model, ...texts.map((text) => ({ steps: [{ text }] })));
      // A pass-through in front of the scripted server that counts client connections.
      let connections = 0;
      const front = createServer(async (rq, rs) => {
        const body: Buffer[] = [];
        for await (const c of rq) body.push(c as Buffer);
        const up = await fetch(`${upstream.url}${rq.url}`, {
          method: 'POST',
          headers: rq.headers as Record<string, string>,
          body: Buffer.concat(body),
        });
        rs.writeHead(up.status, { 'content-type': 'text/event-stream' });
        for await (const c of up.body as AsyncIterable<Uint8Array>) rs.write(c);
        // The reply's last bytes come a moment after its last event, as over a real network.
        setTimeout(() => rs.end(), 5);
      });
      front.on('connection', () => connections++);
      await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(front.address() as { port: number }).port}`;
      try {
        const p = createProvider({
          protocol,
          apiKey: KEY,
          baseUrl: protocol === 'anthropic' ? base : `${base}/v1`,
        });
        for (const text of texts) {
          const events = await collect(p, req(model));
          expect(events.find((e) => e.type === 'text_end')).toMatchObject({ text });
          await new Promise((r) => setTimeout(r, 20)); // a turn's work between two requests
        }
        expect(connections).toBe(1);
      } finally {
        front.closeAllConnections();
        front.close();
      }
    },
  );
});

describe('parseSSE', () => {
  const enc = new TextEncoder();
  function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
    return new ReadableStream({
      start(c) {
        for (const ch of chunks) c.enqueue(ch);
        c.close();
      },
    });
  }
  async function all(body: ByteStream): Promise<SSEEvent[]> {
    const out: SSEEvent[] = [];
    for await (const e of parseSSE(body)) out.push(e);
    return out;
  }
  const wire =
    ': comment\r\nevent: a\r\ndata: {"x":"é€🎉"}\r\nid: 1\r\n\r\n' + // CRLF
    'data:first\ndata: second\ndata\n\n' + // multi-line, no space, bare field
    'event: b\rdata:  two spaces\r\r' + // CR only; only one leading space stripped
    'event: empty\n\n' + // no data: not dispatched
    'retry: 10\nunknown: z\ndata: last\n\n' +
    'data: unterminated';
  const expected: SSEEvent[] = [
    { event: 'a', data: '{"x":"é€🎉"}', id: '1' },
    { event: null, data: 'first\nsecond\n', id: '1' },
    { event: 'b', data: ' two spaces', id: '1' },
    { event: null, data: 'last', id: '1' },
  ];

  it('parses fields, comments, multi-line data and all line endings', async () => {
    expect(await all(streamOf([enc.encode(wire)]))).toEqual(expected);
  });

  it('gives the same events however the bytes are split', async () => {
    const bytes = enc.encode(wire);
    expect(await all(streamOf([...bytes].map((b) => Uint8Array.of(b))))).toEqual(expected);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      expect(await all(streamOf([bytes.slice(0, cut), bytes.slice(cut)]))).toEqual(expected);
    }
  });

  it('dispatches a complete pending event at end of stream', async () => {
    expect(await all(streamOf([enc.encode('data: a\ndata: b\n')]))).toEqual([
      { event: null, data: 'a\nb', id: null },
    ]);
  });

  it('reads a Node stream (the default HTTP path) the same way, abort included', async () => {
    const bytes = enc.encode(wire);
    const node = new PassThrough();
    node.end(Buffer.from(bytes));
    expect(await all(node)).toEqual(expected);
    const ac = new AbortController();
    const open = new PassThrough();
    open.write('data: 1\n\n');
    const it = parseSSE(open, ac.signal);
    expect((await it.next()).value).toEqual({ event: null, data: '1', id: null });
    const pending = it.next();
    setTimeout(() => ac.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(open.destroyed).toBe(true);
  });

  it('stops promptly with AbortError on abort while waiting for bytes', async () => {
    const ac = new AbortController();
    const never = new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(enc.encode('data: 1\n\n')),
    });
    const it = parseSSE(never, ac.signal);
    expect((await it.next()).value).toEqual({ event: null, data: '1', id: null });
    const pending = it.next();
    setTimeout(() => ac.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
