/**
 * The OpenAI chat-completions adapter (core/src/adapters/openai) beyond the port's contract (the
 * shared semantics are in modelProvider.contract.ts, run by modelProvider.test.ts): request
 * mapping (system first, tool_calls, tool messages, concatenated text, function tools, effort →
 * reasoning_effort) and wire edge cases (interleaved tool-call fragments still yield sequential
 * complete blocks; completion without [DONE]).
 */
import { describe, expect, it } from 'vitest';
import { collect, failure, of, req } from './modelProvider.contract.js';
import {
  conversation,
  freshModel,
  KEY,
  lastRequest,
  make,
  oaiChunk,
  rawSSE,
  tools,
  useScriptedModelServer,
} from './modelProvider.fixtures.js';

useScriptedModelServer();

describe('request mapping', () => {
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

describe('model card settings (pi_config, via workers/src/turn/modelSettings.ts)', () => {
  it('openai: effortValue is the reasoning_effort, maxTokensLimit caps the output, headers never replace the key', async () => {
    const model = freshModel();
    await collect(
      make('openai'),
      req(model, {
        effort: 'low',
        effortValue: 'minimal',
        maxTokens: 2048,
        maxTokensLimit: 100,
        headers: { 'x-extra': 'pi', authorization: 'Bearer sk-evil' },
      }),
    );
    const r = lastRequest(model);
    expect(r.body.reasoning_effort).toBe('minimal');
    expect(r.body.max_completion_tokens).toBe(100);
    expect(r.headers['x-extra']).toBe('pi');
    expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
  });
});

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
});
