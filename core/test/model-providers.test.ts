/**
 * Model providers beyond the port's contract (the shared semantics are in
 * modelProvider.contract.ts, run for both adapters by modelProvider.test.ts): request mapping
 * per protocol, wire edge cases, the official SDK against the scripted server, the scripted
 * server itself, provider ids, providers behind the egress policy, and the SSE parser.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicMessagesProvider } from '../src/model/anthropic.js';
import { OpenAIChatProvider } from '../src/model/openai.js';
import { createProvider, providerProtocol } from '../src/model/providers.js';
import { parseSSE, type SSEEvent } from '../src/model/sse.js';
import {
  ModelError,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
} from '../src/ports/modelProvider.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../test/fixtures/scriptedModel.js';
import { createEgressPolicy, egressFetch } from '../src/egress/index.js';
import { collect, failure, of, req } from './modelProvider.contract.js';

const KEY = 'sk-test-very-secret-key-123';
let server: ScriptedModelServer;
let modelSeq = 0;
const freshModel = () => `model-${++modelSeq}`;

beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server.close();
});

type Proto = 'anthropic' | 'openai';
type Opts = {
  baseUrl?: string;
  customHeaders?: Record<string, string>;
  supportsFast?: boolean;
  apiKey?: string;
};
function make(protocol: Proto, o: Opts = {}): ModelProvider {
  const baseUrl = o.baseUrl ?? (protocol === 'anthropic' ? server.url : `${server.url}/v1`);
  const options = { apiKey: KEY, ...o, baseUrl };
  return protocol === 'anthropic'
    ? new AnthropicMessagesProvider(options)
    : new OpenAIChatProvider(options);
}
const lastRequest = (model: string) => {
  const hits = server.requests.filter((r) => r.model === model);
  return hits[hits.length - 1];
};

describe('request mapping', () => {
  const conversation: ModelRequest['messages'] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is the weather?' },
        { type: 'text', text: 'In Paris.' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'unsigned thought' },
        { type: 'thinking', thinking: 'signed thought', signature: 'sig-1' },
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'call_9', name: 'weather', input: { city: 'Paris' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_9',
          content: [
            { type: 'text', text: '21C' },
            { type: 'text', text: 'sunny' },
          ],
        },
        { type: 'text', text: 'Thanks' },
      ],
    },
  ];
  const tools = [
    {
      name: 'weather',
      description: 'Get weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ];

  it('anthropic: system, messages, tools; unsigned thinking dropped', async () => {
    const model = freshModel();
    await collect(
      make('anthropic'),
      req(model, { system: 'Be brief.', messages: conversation, tools, maxTokens: 2048 }),
    );
    const body = lastRequest(model).body;
    expect(body).toMatchObject({
      model,
      system: 'Be brief.',
      max_tokens: 2048,
      stream: true,
      tools,
    });
    expect(body.thinking).toBeUndefined();
    expect(body.messages).toHaveLength(3);
    expect(body.messages[1].content.map((b: any) => b.type)).toEqual([
      'thinking',
      'text',
      'tool_use',
    ]);
    expect(body.messages[1].content[0]).toEqual({
      type: 'thinking',
      thinking: 'signed thought',
      signature: 'sig-1',
    });
    expect(body.messages[2]).toEqual(conversation[2]);
  });

  it('openai: system first, tool_calls, tool messages, concatenated text, function tools', async () => {
    const model = freshModel();
    await collect(
      make('openai'),
      req(model, { system: 'Be brief.', messages: conversation, tools, maxTokens: 2048 }),
    );
    const body = lastRequest(model).body;
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.max_completion_tokens).toBe(2048);
    expect(body.reasoning_effort).toBeUndefined();
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'weather',
          description: 'Get weather',
          parameters: tools[0].input_schema,
        },
      },
    ]);
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is the weather?\nIn Paris.' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          {
            id: 'call_9',
            type: 'function',
            function: { name: 'weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_9', content: '21C\nsunny' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it.each([
    ['low', 1024],
    ['medium', 4096],
    ['high', 10000],
    ['xhigh', 20000],
    ['max', 32000],
  ] as const)(
    'anthropic effort %s → thinking budget %i, max_tokens above it',
    async (effort, budget) => {
      const model = freshModel();
      await collect(make('anthropic'), req(model, { effort, maxTokens: 2000 }));
      const small = lastRequest(model).body;
      expect(small.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
      expect(small.max_tokens).toBe(2000 <= budget ? budget + 2000 : 2000);
      expect(small.max_tokens).toBeGreaterThan(budget);
      await collect(make('anthropic'), req(model, { effort, maxTokens: 64000 }));
      expect(lastRequest(model).body.max_tokens).toBe(64000);
    },
  );

  it.each([
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'high'],
    ['max', 'high'],
  ] as const)('openai effort %s → reasoning_effort %s', async (effort, expected) => {
    const model = freshModel();
    await collect(make('openai'), req(model, { effort }));
    expect(lastRequest(model).body.reasoning_effort).toBe(expected);
  });
});

/** One-shot server replying with a fixed SSE body, for wire shapes the scripted server never produces. */
async function rawSSE(payload: string): Promise<{ url: string; close: () => Promise<void> }> {
  const s = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(payload);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => s.close(() => r())),
  };
}
const oaiChunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const antEvent = (data: Record<string, unknown>) =>
  `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

describe('wire edge cases', () => {
  it('openai: interleaved tool-call fragments still yield sequential, complete blocks', async () => {
    const raw = await rawSSE(
      [
        oaiChunk({ content: 'Hi' }),
        oaiChunk({
          tool_calls: [
            { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{"x"' } },
          ],
        }),
        oaiChunk({
          tool_calls: [
            { index: 1, id: 'b', type: 'function', function: { name: 'g', arguments: '{"y":' } },
          ],
        }),
        oaiChunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
        oaiChunk({ tool_calls: [{ index: 1, function: { arguments: '2}' } }] }),
        oaiChunk({}, 'tool_calls'),
        'data: [DONE]\n\n',
      ].join(''),
    );
    try {
      const events = await collect(make('openai', { baseUrl: raw.url }), req('m'));
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
      const ends = of(events, 'tool_use_end');
      expect(ends.map((e) => [e.id, e.name, e.input])).toEqual([
        ['a', 'f', { x: 1 }],
        ['b', 'g', { y: 2 }],
      ]);
      for (const end of ends) {
        const joined = of(events, 'tool_use_delta')
          .filter((d) => d.id === end.id)
          .map((d) => d.partial_json)
          .join('');
        expect(JSON.parse(joined)).toEqual(end.input);
      }
    } finally {
      await raw.close();
    }
  });

  it('openai: a body ending without [DONE] but after finish_reason completes; before it, fails', async () => {
    const ok = await rawSSE(oaiChunk({ content: 'done' }) + oaiChunk({}, 'length'));
    const cut = await rawSSE(oaiChunk({ content: 'cut' }));
    try {
      const events = await collect(make('openai', { baseUrl: ok.url }), req('m'));
      expect(of(events, 'message_end')[0].stop_reason).toBe('max_tokens');
      const { error } = await failure(make('openai', { baseUrl: cut.url }), req('m'));
      expect(error).toMatchObject({ kind: 'model_request_failed_error', retryable: true });
    } finally {
      await ok.close();
      await cut.close();
    }
  });

  it('anthropic: empty tool input is {}; a stream without message_stop fails', async () => {
    const body = [
      antEvent({
        type: 'message_start',
        message: { usage: { input_tokens: 5, output_tokens: 1 } },
      }),
      antEvent({
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 't', name: 'now', input: {} },
      }),
      antEvent({ type: 'content_block_stop', index: 0 }),
      antEvent({
        type: 'message_delta',
        delta: { stop_reason: 'tool_use' },
        usage: { output_tokens: 3 },
      }),
    ].join('');
    const complete = await rawSSE(body + antEvent({ type: 'message_stop' }));
    const truncated = await rawSSE(body);
    try {
      const events = await collect(make('anthropic', { baseUrl: complete.url }), req('m'));
      expect(of(events, 'tool_use_end')[0]).toEqual({
        type: 'tool_use_end',
        id: 't',
        name: 'now',
        input: {},
      });
      expect(of(events, 'message_end')[0].usage).toMatchObject({
        input_tokens: 5,
        output_tokens: 3,
      });
      const { error } = await failure(make('anthropic', { baseUrl: truncated.url }), req('m'));
      expect(error).toMatchObject({ kind: 'model_request_failed_error', retryable: true });
    } finally {
      await complete.close();
      await truncated.close();
    }
  });
});

describe('official Anthropic SDK against the scripted server', () => {
  it('consumes the stream and the non-streaming reply', async () => {
    const model = freshModel();
    const input = { q: 'x', n: [1, 2, 3] };
    const steps = [
      { thinking: 'hmm', signature: 'sig-z' },
      { text: 'Calling.' },
      { tool_use: { id: 'toolu_1', name: 'search', input } },
    ];
    server.script(model, { steps }, { steps });
    const client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
    const params = { model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
    const streamed = await client.messages.stream(params).finalMessage();
    const plain = await client.messages.create(params);
    for (const msg of [streamed, plain]) {
      expect(msg.stop_reason).toBe('tool_use');
      expect(msg.content).toEqual([
        { type: 'thinking', thinking: 'hmm', signature: 'sig-z' },
        { type: 'text', text: 'Calling.' },
        { type: 'tool_use', id: 'toolu_1', name: 'search', input },
      ]);
    }
  });
});

describe('scripted server', () => {
  it('answers 401 with the protocol error body when the key is missing, and falls back to defaultText', async () => {
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
  async function all(body: ReadableStream<Uint8Array>): Promise<SSEEvent[]> {
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
