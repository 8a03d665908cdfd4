/**
 * Shared fixtures of the per-protocol model-provider tests (model-providers.anthropic.test.ts,
 * model-providers.openai.test.ts, model-providers.shared.test.ts): one scripted model server per
 * test file (test/kit/fixtures/scriptedModel.ts), a provider of either protocol pointed at it, the
 * last request it recorded for a model, a one-shot raw SSE server for wire shapes the scripted
 * server never produces, and a conversation exercising every block type.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { AnthropicMessagesProvider } from '../src/models/anthropic/provider.js';
import { OpenAIChatProvider } from '../src/models/openai/provider.js';
import type { ModelProvider, ModelRequest } from '../src/models/port.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../test/kit/fixtures/scriptedModel.js';
import { KEY } from './modelProvider.contract.js';

export { KEY };

let current: ScriptedModelServer | undefined;
let modelSeq = 0;
export const freshModel = () => `model-${++modelSeq}`;

/** Starts the file's scripted model server before its tests and closes it after them. */
export function useScriptedModelServer(): void {
  beforeAll(async () => {
    current = await startScriptedModelServer();
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
}

/** The file's scripted model server (see useScriptedModelServer). */
export function scriptedServer(): ScriptedModelServer {
  if (!current) throw new Error('useScriptedModelServer() was not called in this file');
  return current;
}

export type Proto = 'anthropic' | 'openai';
type Opts = {
  baseUrl?: string;
  customHeaders?: Record<string, string>;
  supportsFast?: boolean;
  apiKey?: string;
};
export function make(protocol: Proto, o: Opts = {}): ModelProvider {
  const server = scriptedServer();
  const baseUrl = o.baseUrl ?? (protocol === 'anthropic' ? server.url : `${server.url}/v1`);
  const options = { apiKey: KEY, ...o, baseUrl };
  return protocol === 'anthropic'
    ? new AnthropicMessagesProvider(options)
    : new OpenAIChatProvider(options);
}
export const lastRequest = (model: string) => {
  const hits = scriptedServer().requests.filter((r) => r.model === model);
  return hits[hits.length - 1];
};

/** One-shot server replying with a fixed SSE body, for wire shapes the scripted server never produces. */
export async function rawSSE(
  payload: string,
): Promise<{ url: string; close: () => Promise<void> }> {
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
export const oaiChunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
export const antEvent = (data: Record<string, unknown>) =>
  `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

export const conversation: ModelRequest['messages'] = [
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
export const tools = [
  {
    name: 'weather',
    description: 'Get weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  },
];
