/**
 * Test set-up shared by the end-to-end tests: registering a scripted-model card, building
 * script steps, and running one session turn through the official SDK's event stream.
 * Plumbing only: every helper either returns what it saw or asserts the platform accepted the
 * set-up (addModelCard expects 200), so the tests' own assertions stay where they were.
 * Used by test/env-packages*.test.ts, test/e2e/sandbox/permission-policy.test.ts, test/e2e/environments/base-image.test.ts,
 * test/e2e/environments/env-networking.test.ts, test/e2e/sandbox/web-tool-options.test.ts, test/e2e/turns/budget.test.ts,
 * test/e2e/models/effort-pi-config.test.ts, test/e2e/events/event-deltas.test.ts, test/e2e/files/file-blocks.test.ts,
 * test/e2e/events/system-message.test.ts, test/e2e/agents/agent-overrides.test.ts, test/e2e/sessions/session-delete-sandbox.test.ts
 * and test/e2e/environments/environment-snapshot-sandbox.test.ts (each run proves the helpers it uses).
 */
import type Anthropic from '@anthropic-ai/sdk';
import { expect } from 'vitest';
import type { ScriptedResponse } from './fixtures/scriptedModel.js';
import { BETA, type TestPlatform } from './harness.js';

export interface ModelCardOptions {
  /** Wire protocol of the scripted model; openai cards point at its /v1 base. */
  provider?: 'anthropic' | 'openai';
  /** Model name sent on the wire (default: the card's model_id). */
  model?: string;
  /** The card's vendor key (default 'k'). */
  apiKey?: string;
  /** Tenant API key to register the card under (default: the platform's tenant). */
  key?: string;
  piConfig?: unknown;
}

/** Registers a card for `modelId` served by the scripted model; asserts 200 and returns its id. */
export async function addModelCard(
  t: TestPlatform,
  modelId: string,
  opts: ModelCardOptions = {},
): Promise<string> {
  const provider = opts.provider ?? 'anthropic';
  const res = await t.http('/v1/svc/model_cards', {
    method: 'POST',
    ...(opts.key ? { key: opts.key } : {}),
    headers: BETA,
    json: {
      model_id: modelId,
      provider,
      model: opts.model ?? modelId,
      base_url: provider === 'openai' ? `${t.model.url}/v1` : t.model.url,
      api_key: opts.apiKey ?? 'k',
      ...(opts.piConfig ? { pi_config: opts.piConfig } : {}),
    },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

/** One scripted model response calling tool `name` with `input`. */
export const call = (name: string, input: Record<string, unknown>): ScriptedResponse => ({
  steps: [{ tool_use: { name, input } }],
});
/** One scripted model response answering `text`. */
export const say = (text: string): ScriptedResponse => ({ steps: [{ text }] });

/** One scripted model response that calls tool `name` and stops for its result (stop_reason tool_use). */
export const useTool = (name: string, input: Record<string, unknown>): ScriptedResponse => ({
  steps: [{ tool_use: { name, input } }],
  stop_reason: 'tool_use',
});
/** A scripted model response chosen by `f` from the request it answers. */
export const decide = (f: (body: any) => ScriptedResponse): ScriptedResponse => ({
  steps: [],
  decide: f,
});
/** Everything a model request was told (its messages as JSON), to match text in. */
export const sentText = (body: any) => JSON.stringify(body.messages ?? []);

/** A user.message input event with one text block. */
export const userMessage = (text: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text }],
});

/** Opens the session's stream, sends `events` and collects up to the next session.status_idle. */
export async function untilIdle(client: Anthropic, sid: string, events: any[]): Promise<any[]> {
  const stream = await client.beta.sessions.events.stream(sid);
  await client.beta.sessions.events.send(sid, { events });
  const seen: any[] = [];
  for await (const ev of stream) {
    seen.push(ev);
    if (ev.type === 'session.status_idle') break;
  }
  return seen;
}

export interface Turn {
  events: any[];
  toolResults: any[];
  idle: any;
}

/** One turn: sends a user.message with `text` and collects events until session.status_idle. */
export async function runTurn(client: Anthropic, sid: string, text: string): Promise<Turn> {
  const events = await untilIdle(client, sid, [userMessage(text)]);
  return {
    events,
    toolResults: events.filter((e) => e.type === 'agent.tool_result'),
    idle: events.find((e) => e.type === 'session.status_idle'),
  };
}
