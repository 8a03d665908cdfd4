/**
 * The Anthropic Messages adapter (core/src/adapters/anthropic) beyond the port's contract (the
 * shared semantics are in modelProvider.contract.ts, run by modelProvider.test.ts): request
 * mapping (system, messages, tools, unsigned thinking dropped, effort → thinking budget with the
 * output cap kept; the card's ceiling, numeric budgets and extra headers), wire edge cases (empty tool input, a stream without message_stop), and the
 * official Anthropic SDK against the scripted server speaking this protocol.
 */
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { collect, failure, of, req } from './modelProvider.contract.js';
import {
  antEvent,
  conversation,
  freshModel,
  KEY,
  lastRequest,
  make,
  rawSSE,
  scriptedServer,
  tools,
  useScriptedModelServer,
} from './modelProvider.fixtures.js';

useScriptedModelServer();

describe('request mapping', () => {
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
});

describe('model card settings (pi_config, via workers/src/turn/modelSettings.ts)', () => {
  it('anthropic: maxTokensLimit caps max_tokens, thinking gets at most half, none below 1024', async () => {
    const model = freshModel();
    const p = make('anthropic');
    await collect(p, req(model, { effort: 'high', maxTokens: 8192, maxTokensLimit: 6000 }));
    expect(lastRequest(model).body).toMatchObject({
      max_tokens: 6000,
      thinking: { type: 'enabled', budget_tokens: 3000 },
    });
    await collect(p, req(model, { effort: 'high', maxTokens: 8192, maxTokensLimit: 2000 }));
    expect(lastRequest(model).body.max_tokens).toBe(2000);
    expect(lastRequest(model).body.thinking).toBeUndefined();
    await collect(p, req(model, { maxTokens: 8192, maxTokensLimit: 700 }));
    expect(lastRequest(model).body.max_tokens).toBe(700);
  });

  it('anthropic: a numeric effortValue is the thinking budget; a name is not', async () => {
    const model = freshModel();
    const p = make('anthropic');
    await collect(p, req(model, { effort: 'low', effortValue: '5000', maxTokens: 64000 }));
    expect(lastRequest(model).body.thinking).toEqual({ type: 'enabled', budget_tokens: 5000 });
    await collect(p, req(model, { effort: 'low', effortValue: 'low', maxTokens: 64000 }));
    expect(lastRequest(model).body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });

  it("anthropic: request headers are sent; credentials and the card's custom headers win", async () => {
    const model = freshModel();
    const p = make('anthropic', { customHeaders: { 'x-team': 'card' } });
    await collect(
      p,
      req(model, {
        headers: {
          'x-extra': 'pi',
          'x-team': 'pi',
          'x-api-key': 'sk-evil',
          'anthropic-version': '1999-01-01',
        },
      }),
    );
    const h = lastRequest(model).headers;
    expect(h['x-extra']).toBe('pi');
    expect(h['x-team']).toBe('card');
    expect(h['x-api-key']).toBe(KEY);
    expect(h['anthropic-version']).toBe('2023-06-01');
  });
});

describe('wire edge cases', () => {
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
    const server = scriptedServer();
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
