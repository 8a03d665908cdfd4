/**
 * Set-up shared by the compaction tests (test/e2e/turns/compaction.test.ts,
 * test/e2e/turns/compaction-overflow.test.ts, test/e2e/turns/compaction-usage.test.ts): a harness `pi` agent on its own scripted-model card, turns
 * through the SDK, and protocol-neutral readers of the requests the scripted model captured
 * (system prompt, tools, session id, reasoning, the conversation as role + text). Plumbing only:
 * each reader returns what the request carried; the assertions stay in the tests.
 */
import { expect } from 'vitest';
import { validateSessionEvent } from '@agentfleet/schemas';
import type { ScriptedModelServer } from '../../kit/fixtures/scriptedModel.js';
import { waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

export type Protocol = 'anthropic' | 'openai';
export type Captured = ScriptedModelServer['requests'][number];

let n = 0;

/** A `pi` agent (or `default` when harness says so) on a fresh card; returns its session. */
export async function piSession(
  t: TestPlatform,
  envId: string,
  protocol: Protocol,
  opts: {
    metadata?: Record<string, string>;
    pi?: Record<string, unknown>;
    harness?: 'pi' | 'default';
    effort?: 'high';
    system?: string;
    budget?: { type: 'limit'; max_list_cost: { amount: string; currency: 'USD' } };
  } = {},
) {
  const wire = `compact-${protocol}-${++n}`;
  await addModelCard(t, wire, { provider: protocol, apiKey: `sk-compact-${n}`, piConfig: opts.pi });
  const res = await t.http('/v1/agents', {
    method: 'POST',
    json: {
      name: `compaction-${n}`,
      model: opts.effort ? { id: wire, effort: opts.effort } : wire,
      system: opts.system ?? 'You are the compaction test agent.',
      tools: [
        {
          type: 'custom',
          name: 'lookup',
          description: 'Looks a word up.',
          input_schema: { type: 'object', properties: { word: { type: 'string' } } },
        },
      ],
      harness: opts.harness ?? 'pi',
      metadata: opts.metadata ?? {},
    },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const agent = (await res.json()) as { id: string };
  const session = await t.client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
    ...(opts.budget ? { budget: opts.budget } : {}),
  });
  return { wire, sid: session.id };
}

export const events = async (t: TestPlatform, sid: string) =>
  ((await (await t.http(`/v1/sessions/${sid}/events?limit=1000`)).json()) as any).data as any[];

/** Sends one user message (text, optionally with an image block) and waits for the turn's idle. */
export async function turn(t: TestPlatform, sid: string, text: string, imageData?: string) {
  const idles = (await events(t, sid)).filter((e) => e.type === 'session.status_idle').length;
  const content: any[] = [{ type: 'text', text }];
  if (imageData)
    content.push({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: imageData },
    });
  await t.client.beta.sessions.events.send(sid, { events: [{ type: 'user.message', content }] });
  return waitFor(async () => {
    const ev = await events(t, sid);
    return ev.filter((e) => e.type === 'session.status_idle').length > idles ? ev : null;
  });
}

/** Every served event matches the schema of its type (the new ones included). */
export function expectValidEvents(list: any[]) {
  for (const e of list) validateSessionEvent(e);
}

export const requestsOf = (t: TestPlatform, wire: string) =>
  t.model.requests.filter((r) => r.model === wire);

export function systemOf(r: Captured): string | undefined {
  if (r.protocol === 'anthropic') {
    const s = r.body.system;
    return Array.isArray(s) ? s.map((b: any) => b.text).join('\n') : s;
  }
  const first = r.body.messages[0];
  return first?.role === 'system' ? first.content : undefined;
}

export const toolsOf = (r: Captured) => r.body.tools;

export const sessionIdOf = (r: Captured): string | undefined =>
  r.protocol === 'anthropic' ? r.body.metadata?.user_id : r.body.prompt_cache_key;

export const reasoningOf = (r: Captured) =>
  r.protocol === 'anthropic' ? r.body.thinking : r.body.reasoning_effort;

/** The conversation (system prompt left out) as role and joined text; images as `[image]`. */
export function conversationOf(r: Captured): Array<{ role: string; text: string }> {
  const msgs: any[] = r.body.messages.filter((m: any, i: number) =>
    r.protocol === 'openai' ? !(i === 0 && m.role === 'system') : true,
  );
  return msgs.map((m) => ({
    role: m.role,
    text:
      typeof m.content === 'string'
        ? m.content
        : ((m.content ?? []) as any[])
            .map((b) =>
              b.type === 'text'
                ? b.text
                : b.type === 'image' || b.type === 'image_url'
                  ? '[image]'
                  : `[${b.type}]`,
            )
            .join('\n'),
  }));
}

export const RED_DOT_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
