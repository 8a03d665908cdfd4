/**
 * Model card `pi_config.samplingParams`, `compat` and `input` either reach the provider or are a
 * 400 naming them (core/src/models/piRequest.ts, workers/src/turn/modelSettings.ts), observed at
 * the scripted model server (test/kit/fixtures/scriptedModel.ts) on both protocols:
 * - samplingParams: Anthropic temperature/top_p/top_k, OpenAI temperature/top_p sent on every
 *   request; out-of-range values, a key the protocol lacks (OpenAI topK) or an unknown one, and
 *   temperature/top_k beside Anthropic extended thinking are 400s naming the key;
 * - compat: `maxTokensField: 'max_tokens'` sends the OpenAI output cap under that name; any key
 *   other than supportsStrictMode/maxTokensField (maxTokensField on Anthropic) is a 400;
 * - input: a card stating text-only input gets image blocks as a text note, never the image;
 *   a malformed input list is a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
  envId = (await t.client.beta.environments.create({ name: 'pi-request' })).id;
});
afterAll(async () => {
  await t?.close();
});

/** A 1×1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
let n = 0;

/** One turn on a fresh card with this pi_config; the request the scripted model received. */
async function requestFor(protocol: 'anthropic' | 'openai', pi: object, content?: any[]) {
  const wire = `pireq-${protocol}-${++n}`;
  await addModelCard(t, wire, { provider: protocol, piConfig: pi as Record<string, unknown> });
  const agent = await t.client.beta.agents.create({ name: wire, model: wire });
  const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  await t.client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: content ?? [{ type: 'text', text: 'hi' }] }],
  });
  await waitFor(async () => {
    const r = await t.http(`/v1/sessions/${s.id}/events?limit=100`);
    const ev = ((await r.json()) as any).data as any[];
    return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
  });
  return t.model.requests.filter((r) => r.model === wire).at(-1)!.body as any;
}

const cardStatus = async (provider: string, pi: object) => {
  const res = await t.http('/v1/svc/model_cards', {
    method: 'POST',
    headers: BETA,
    json: {
      model_id: `bad-${++n}`,
      provider,
      model: 'm',
      base_url: provider === 'openai' ? `${t.model.url}/v1` : t.model.url,
      api_key: 'k',
      pi_config: pi,
    },
  });
  return { status: res.status, message: ((await res.json()) as any).error?.message as string };
};

describe('pi_config request settings', () => {
  it('samplingParams reach the provider on both protocols', async () => {
    const a = await requestFor('anthropic', {
      samplingParams: { temperature: 0.3, topP: 0.9, topK: 40 },
    });
    expect([a.temperature, a.top_p, a.top_k]).toEqual([0.3, 0.9, 40]);
    const o = await requestFor('openai', { samplingParams: { temperature: 1.5, topP: 0.5 } });
    expect([o.temperature, o.top_p, o.top_k]).toEqual([1.5, 0.5, undefined]);
    expect(o.max_completion_tokens).toBeGreaterThan(0);
    const none = await requestFor('openai', {});
    expect([none.temperature, none.top_p]).toEqual([undefined, undefined]);
  });

  it("compat.maxTokensField names the OpenAI output cap's field", async () => {
    const o = await requestFor('openai', {
      maxTokens: 1000,
      compat: { maxTokensField: 'max_tokens', supportsStrictMode: true },
    });
    expect(o.max_tokens).toBe(1000);
    expect(o.max_completion_tokens).toBeUndefined();
  });

  it('a text-only card gets image blocks as a text note, never the image', async () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } };
    const content = [{ type: 'text', text: 'look' }, image];
    const a = await requestFor('anthropic', { input: ['text'] }, content);
    const sent = JSON.stringify(a.messages);
    expect(sent).not.toContain(PNG);
    expect(a.messages.at(-1).content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'text', text: expect.stringMatching(/image was left out.*text input only/) },
    ]);
    // A card that states image input gets the image.
    const withImages = await requestFor('anthropic', { input: ['text', 'image'] }, content);
    expect(JSON.stringify(withImages.messages)).toContain(PNG);
  });

  it('what cannot be sent is a 400 naming the key', async () => {
    for (const [provider, pi, field] of [
      ['openai', { samplingParams: { topK: 5 } }, 'pi_config.samplingParams.topK'],
      [
        'anthropic',
        { samplingParams: { temperature: 1.5 } },
        'pi_config.samplingParams.temperature',
      ],
      ['openai', { samplingParams: { seed: 1 } }, 'pi_config.samplingParams.seed'],
      ['openai', { samplingParams: 0.5 }, 'pi_config.samplingParams'],
      [
        'anthropic',
        { reasoning: true, samplingParams: { temperature: 0.5 } },
        'pi_config.samplingParams.temperature',
      ],
      [
        'anthropic',
        { reasoning: true, samplingParams: { topP: 0.5 } },
        'pi_config.samplingParams.topP',
      ],
      [
        'openai',
        { compat: { supportsDeveloperRole: false } },
        'pi_config.compat.supportsDeveloperRole',
      ],
      [
        'anthropic',
        { compat: { maxTokensField: 'max_tokens' } },
        'pi_config.compat.maxTokensField',
      ],
      ['openai', { compat: { maxTokensField: 'tokens' } }, 'pi_config.compat.maxTokensField'],
      ['openai', { input: ['image'] }, 'pi_config.input'],
      ['openai', { input: ['text', 'audio'] }, 'pi_config.input'],
    ] as const) {
      const r = await cardStatus(provider, pi);
      expect(r.status, `${provider} ${JSON.stringify(pi)}`).toBe(400);
      expect(r.message, JSON.stringify(pi)).toMatch(
        new RegExp(`^${field.replace(/\./g, '\\.')}: `),
      );
    }
    expect(
      (await cardStatus('anthropic', { reasoning: true, samplingParams: { topP: 0.95 } })).status,
    ).toBe(200);
  });
});
