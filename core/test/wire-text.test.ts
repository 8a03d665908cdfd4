/**
 * The request bodies the model adapters send (core/src/models/wireText.ts): the bytes of
 * anthropicBodyBytes / openAIBodyBytes parse to exactly toAnthropicBody / toOpenAIBody, on a
 * first call and on every later call that resumes a conversation, whatever the conversation
 * holds (mid-conversation system messages, unsigned thinking that leaves two user turns side by
 * side, tool calls and results, non-ASCII text, messages that are not frozen, a conversation
 * that diverges from the one remembered). And a resumed call does reuse the kept bytes: a frozen
 * message is encoded once.
 */
import { describe, expect, it } from 'vitest';
import { anthropicBodyBytes, toAnthropicBody } from '../src/models/anthropic/requestBody.js';
import { openAIBodyBytes, toOpenAIBody } from '../src/models/openai/requestBody.js';
import type { ChatMessage, ContentBlock, ModelRequest } from '../src/models/port.js';

const PROTOCOLS = [
  { name: 'anthropic', bytes: anthropicBodyBytes, object: toAnthropicBody },
  { name: 'openai', bytes: openAIBodyBytes, object: toOpenAIBody },
] as const;

const frozen = (role: ChatMessage['role'], ...content: ContentBlock[]): ChatMessage =>
  Object.freeze({ role, content: content.map((b) => Object.freeze(b)) });
const text = (t: string): ContentBlock => ({ type: 'text', text: t });

/** Message i of a conversation exercising every mapping rule, frozen as a kept builder's. */
function message(i: number): ChatMessage {
  switch (i % 9) {
    case 0:
      return frozen('user', text(`question ${i} — naïve café 🚀 "quoted" \\ back\nslash`));
    case 1:
      return frozen(
        'assistant',
        { type: 'thinking', thinking: `thought ${i}`, signature: `sig-${i}` },
        text(`answer ${i}`),
        { type: 'tool_use', id: `call_${i}`, name: 'bash', input: { cmd: `echo ${i}`, n: [i] } },
      );
    case 2:
      return frozen('user', {
        type: 'tool_result',
        tool_use_id: `call_${i - 1}`,
        content: [text(`out ${i}`)],
        is_error: i % 2 === 0,
      });
    case 3:
      return frozen('system', text(`mid-conversation instruction ${i}`));
    case 4:
      return frozen('user', text(`after the system message ${i}`));
    case 5:
      // Unsigned thinking only: dropped by Anthropic, so the user turns around it merge.
      return frozen('assistant', { type: 'thinking', thinking: `unsigned ${i}` });
    case 6:
      return frozen('user', text(`joins the user turn before ${i}`));
    case 7:
      return frozen('assistant', text(`plain ${i}`));
    default:
      return frozen('user', text(`next ${i}`), {
        type: 'image',
        source: { type: 'url', url: `https://example.com/${i}.png` },
      });
  }
}

const request = (messages: ChatMessage[], system?: string): ModelRequest => ({
  model: 'm-1',
  maxTokens: 512,
  messages,
  ...(system ? { system } : {}),
  tools: [{ name: 'bash', description: 'run', input_schema: { type: 'object' } }],
  sessionId: 'sesn_1',
});

describe.each(PROTOCOLS)('$name body bytes', ({ bytes, object }) => {
  const parsed = (req: ModelRequest) => JSON.parse(bytes(req).toString('utf8'));

  it('equal the object mapping on every call of a growing conversation', () => {
    for (const system of [undefined, 'Be brief.']) {
      const msgs: ChatMessage[] = [];
      expect(parsed(request([], system))).toEqual(object(request([], system)));
      for (let i = 0; i < 60; i++) {
        msgs.push(message(i));
        // A fresh array each call, as the history builder hands out.
        const req = request(msgs.slice(), system);
        expect(parsed(req)).toEqual(object(req));
      }
    }
  });

  it('equal the object mapping when the last message grows, or an earlier one is replaced', () => {
    const msgs = Array.from({ length: 20 }, (_, i) => message(i));
    parsed(request(msgs.slice()));
    // The last message grown (a new frozen copy, as the builder makes).
    const grown = msgs.slice();
    grown[19] = frozen(grown[19]!.role, ...grown[19]!.content, text('more'));
    expect(parsed(request(grown))).toEqual(object(request(grown)));
    // An earlier message replaced: the remembered prefix no longer matches.
    const replaced = grown.slice();
    replaced[7] = frozen('assistant', text('a different answer'));
    expect(parsed(request(replaced))).toEqual(object(request(replaced)));
    // Shorter than what was remembered.
    const shorter = replaced.slice(0, 5);
    expect(parsed(request(shorter))).toEqual(object(request(shorter)));
  });

  it('equal the object mapping with messages that are not frozen, and see their changes', () => {
    const msgs: ChatMessage[] = Array.from({ length: 12 }, (_, i) => message(i));
    const loose: ChatMessage = { role: 'user', content: [text('a resolved file copy')] };
    msgs.splice(6, 0, loose);
    const req = request(msgs);
    expect(parsed(req)).toEqual(object(req));
    loose.content.push(text('changed'));
    const again = request(msgs.slice());
    expect(parsed(again)).toEqual(object(again));
    expect(JSON.stringify(parsed(again))).toContain('changed');
  });

  it('encode a frozen message once: a resumed call reuses its kept bytes', () => {
    const first = frozen('user', text('hello'));
    const second = frozen('assistant', text('hi'));
    bytes(request([first, second]));
    // Frozen messages never change (history.ts); forcing one shows which bytes were sent.
    (first.content as ContentBlock[]).push(text('never sent'));
    const resumed = bytes(request([first, second, frozen('user', text('again'))]));
    expect(resumed.toString('utf8')).not.toContain('never sent');
    expect(resumed.toString('utf8')).toContain('again');
  });
});
