/**
 * The official TypeScript SDK's EnvironmentWorker (@anthropic-ai/sdk 1.12, lib/environments,
 * used unchanged with its default toolset) serves a session of a self_hosted environment end to
 * end against this server: it polls the Work API with an environment service key, acks,
 * heartbeats and reads the session with the claim's sessions_token, runs the bash call the
 * scripted model makes in its own workdir, and answers it with user.tool_result; the control
 * plane's loop then continues to the final agent.message (the ama_worker lane). The file the bash
 * command writes lands in the worker's workdir, the platform starts no sandbox of its own, and
 * the worker force-stops its Work item when the session has gone idle. An always_ask call is run
 * by the worker only after the client allows it, and the turn resumes once (two model calls).
 * Proves workers/src/tools/selfHosted.ts with the Work API (core/src/work) and the claimed-session
 * bearer.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, userMessage } from '../../kit/turnHelpers.js';

const MODEL = 'env-worker-model';
const ASK_MODEL = 'env-worker-ask-model';

let t: TestPlatform;
let workdir: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  await addModelCard(t, MODEL);
  await addModelCard(t, ASK_MODEL);
  workdir = mkdtempSync(join(tmpdir(), 'agentfleet-env-worker-'));
}, 60_000);
afterAll(async () => {
  await t?.close();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

/** An environment service key for `environmentId` (shown once at create). */
async function envKey(environmentId: string): Promise<string> {
  const res = await t.http('/v1/svc/api_keys', {
    method: 'POST',
    headers: BETA,
    json: { name: 'ts-worker', environment_id: environmentId },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { key: string }).key;
}

describe('the official TypeScript EnvironmentWorker (ama_worker lane)', () => {
  it("serves a session whose model calls bash: the file lands in the worker's workdir", async () => {
    const env = await t.client.beta.environments.create({
      name: 'ts-worker',
      config: { type: 'self_hosted' },
    });
    const environmentKey = await envKey(env.id);
    const agent = await t.client.beta.agents.create({
      name: 'ts-worker',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
    });
    t.model.script(
      MODEL,
      {
        steps: [
          {
            tool_use: {
              name: 'bash',
              input: { command: 'echo hello-from-the-worker | tee made-by-bash.txt' },
            },
          },
        ],
      },
      { steps: [{ text: 'the worker wrote the file' }] },
    );

    // The worker holds only the environment key; its client has no API key of its own.
    const workerClient = new Anthropic({ apiKey: null, authToken: null, baseURL: t.url });
    const stop = new AbortController();
    const worker = workerClient.beta.environments.work.worker({
      environmentId: env.id,
      environmentKey,
      workdir,
      maxIdleMs: 300,
    });
    const running = worker.run(stop.signal).catch((err) => {
      if (!stop.signal.aborted) throw err;
    });
    try {
      const stream = await t.client.beta.sessions.events.stream(session.id);
      await t.client.beta.sessions.events.send(session.id, {
        events: [userMessage('make a file')],
      });
      const seen: any[] = [];
      for await (const ev of stream) {
        seen.push(ev);
        if (ev.type === 'session.status_idle' && ev.stop_reason?.type === 'end_turn') break;
      }
      const order = seen
        .filter((e) => ['agent.tool_use', 'user.tool_result', 'agent.message'].includes(e.type))
        .map((e) => e.type);
      expect(order).toEqual(['agent.tool_use', 'user.tool_result', 'agent.message']);
      const use = seen.find((e) => e.type === 'agent.tool_use');
      const result = seen.find((e) => e.type === 'user.tool_result');
      expect(use).toMatchObject({ name: 'bash', evaluated_permission: 'allow' });
      expect(result).toMatchObject({ tool_use_id: use.id, is_error: false });
      expect(result.content[0].text).toContain('hello-from-the-worker');
      expect(seen.find((e) => e.type === 'agent.message').content[0].text).toBe(
        'the worker wrote the file',
      );
      // The bash command ran in the worker's workdir, and nowhere on the platform.
      expect(readFileSync(join(workdir, 'made-by-bash.txt'), 'utf8')).toBe(
        'hello-from-the-worker\n',
      );
      expect(seen.filter((e) => e.type === 'agent.tool_result')).toEqual([]);
      expect(t.server.sandboxes!.manager.state(session.id)).toBe('cold');
      // The model saw the worker's result paired with its call.
      const last = t.model.requests.filter((r) => r.model === MODEL).at(-1)!.body.messages;
      expect(last.at(-1).content[0]).toMatchObject({ type: 'tool_result', tool_use_id: use.id });

      // Once the session idles, the worker stops its Work item (it owns heartbeat and stop).
      const stopped = await waitFor(async () => {
        const list = await t.http(`/v1/environments/${env.id}/work`, { headers: BETA });
        const items = ((await list.json()) as { data: any[] }).data ?? [];
        const item = items.find((w) => w.data?.id === session.id);
        return item?.state === 'stopped' ? item : null;
      }, 30_000);
      expect(stopped.data).toEqual({ type: 'session', id: session.id });
    } finally {
      stop.abort();
      await running;
    }
  }, 90_000);
  it('an always_ask call runs in the worker once allowed, and the turn resumes exactly once', async () => {
    const env = await t.client.beta.environments.create({
      name: 'ts-worker-ask',
      config: { type: 'self_hosted' },
    });
    const environmentKey = await envKey(env.id);
    const agent = await t.client.beta.agents.create({
      name: 'ts-worker-ask',
      model: ASK_MODEL,
      tools: [
        {
          type: 'agent_toolset_20260401',
          default_config: { permission_policy: { type: 'always_ask' } },
        },
      ],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
    });
    t.model.script(
      ASK_MODEL,
      {
        steps: [{ tool_use: { name: 'bash', input: { command: 'echo approved > approved.txt' } } }],
      },
      { steps: [{ text: 'ran after approval' }] },
    );
    const stop = new AbortController();
    const running = new Anthropic({
      apiKey: null,
      authToken: null,
      baseURL: t.url,
    }).beta.environments.work
      .worker({ environmentId: env.id, environmentKey, workdir, maxIdleMs: 300 })
      .run(stop.signal)
      .catch((err) => {
        if (!stop.signal.aborted) throw err;
      });
    try {
      const stream = await t.client.beta.sessions.events.stream(session.id);
      await t.client.beta.sessions.events.send(session.id, { events: [userMessage('ask first')] });
      const seen: any[] = [];
      for await (const ev of stream) {
        seen.push(ev);
        if (ev.type === 'session.status_idle' && ev.stop_reason?.type === 'requires_action') {
          const use = seen.find((e) => e.type === 'agent.tool_use');
          if (!seen.some((e) => e.type === 'user.tool_confirmation'))
            await t.client.beta.sessions.events.send(session.id, {
              events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
            });
        }
        if (ev.type === 'session.status_idle' && ev.stop_reason?.type === 'end_turn') break;
      }
      const use = seen.find((e) => e.type === 'agent.tool_use');
      expect(use.evaluated_permission).toBe('ask');
      // The worker ran it only after the allow (the SDK holds ask calls), in its workdir.
      const types = seen.map((e) => e.type);
      expect(types.indexOf('user.tool_confirmation')).toBeLessThan(
        types.indexOf('user.tool_result'),
      );
      expect(readFileSync(join(workdir, 'approved.txt'), 'utf8')).toBe('approved\n');
      expect(seen.filter((e) => e.type === 'agent.tool_result')).toEqual([]);

      // Once the worker has stopped its item (it idled out), the log shows one resumed turn:
      // the model was called twice in all, whenever the result landed relative to the allow.
      await waitFor(async () => {
        const list = await t.http(`/v1/environments/${env.id}/work`, { headers: BETA });
        const items = ((await list.json()) as { data: any[] }).data ?? [];
        return items.find((w) => w.data?.id === session.id)?.state === 'stopped' ? true : null;
      }, 30_000);
      const log = (await t.client.beta.sessions.events.list(session.id, { limit: 1000 }))
        .data as any[];
      expect(log.filter((e) => e.type === 'agent.message').map((e) => e.content[0].text)).toEqual([
        'ran after approval',
      ]);
      expect(log.filter((e) => e.type === 'user.tool_result').map((e) => e.tool_use_id)).toEqual([
        use.id,
      ]);
      expect(t.model.requests.filter((r) => r.model === ASK_MODEL)).toHaveLength(2);
      expect(log.at(-1)).toMatchObject({
        type: 'session.status_idle',
        stop_reason: { type: 'end_turn' },
      });
    } finally {
      stop.abort();
      await running;
    }
  }, 90_000);
});
