/**
 * What the eval tests share: a scripted model that plays the agent of every case and the
 * outcome grader, answering by what each request holds (cases run concurrently, so answers
 * cannot be queued in order), and polling a run until it ends.
 */
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import type { TestPlatform } from '../../kit/harness.js';
import { apiJson } from '../../kit/integrations.js';
import { call, say } from '../../kit/turnHelpers.js';

const text = (x: unknown) => JSON.stringify(x ?? '');
export const isGrader = (body: any) => text(body?.system).includes('outcome grader');

/**
 * The agent's answer by the case's prompt (its first user message) and, for `apple`, the
 * agent version (a system prompt with "v2" answers right); the grader satisfied by a
 * "Title:" line only. A `delay` prompt answers after 20 s (a run that stays live).
 */
export function respond(body: any): ScriptedResponse {
  if (isGrader(body)) {
    const titled = text(body.messages).includes('Title:');
    return say(
      JSON.stringify(
        titled
          ? { result: 'satisfied', explanation: 'It has a title line.' }
          : { result: 'needs_revision', explanation: 'There is no title line.' },
      ),
    );
  }
  const prompt = text(body.messages?.[0]);
  const last = body.messages?.at(-1);
  if (Array.isArray(last?.content) && last.content.some((b: any) => b.type === 'tool_result'))
    return say('done');
  if (prompt.includes('banana')) return say('Here it is: banana!');
  if (prompt.includes('apple')) return say(text(body.system).includes('v2') ? 'apple' : 'pear');
  if (prompt.includes('titled poem')) return say('Title: Sea\nThe sea is wide.');
  if (prompt.includes('haiku')) return say('No haiku today.');
  if (prompt.includes('make-file'))
    return call('bash', { command: 'echo made > /workspace/made.txt' });
  if (prompt.includes('delay')) return { steps: [{ delay_ms: 20_000 }, { text: 'late' }] };
  return say('ok');
}

/** Queues `n` answers of `respond` for `model`. */
export function scriptEvals(t: Pick<TestPlatform, 'model'>, model: string, n = 300) {
  t.model.script(model, ...Array.from({ length: n }, () => ({ steps: [], decide: respond })));
}

const FINAL = new Set(['completed', 'cancelled', 'failed']);

/** Polls GET …/evals/:id until the run is final; `seen` gets every answer on the way. */
export async function untilEnded(
  get: () => Promise<{ status: number; body: any }>,
  seen: any[] = [],
  timeoutMs = 90_000,
): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await get();
    if (r.status !== 200) throw new Error(`eval read: ${r.status} ${JSON.stringify(r.body)}`);
    seen.push(r.body);
    if (FINAL.has(r.body.status)) return r.body;
    if (Date.now() > end) throw new Error(`eval still ${r.body.status}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 150));
  }
}

export const startEval = (t: TestPlatform, body: unknown, key?: string) =>
  apiJson(t, '/v1/svc/evals', { method: 'POST', json: body, ...(key ? { key } : {}) });
export const readEval = (t: TestPlatform, id: string, key?: string) =>
  apiJson(t, `/v1/svc/evals/${id}`, key ? { key } : {});
