/**
 * The official TypeScript SDK's EnvironmentWorker (@anthropic-ai/sdk 1.12, lib/environments,
 * used unchanged with its default toolset) serves a session of a self_hosted environment end to
 * end against this server: it polls the Work API with an environment service key, acks,
 * heartbeats and reads the session with the claim's sessions_token, runs the bash call the
 * scripted model makes in its own workdir, and answers it with user.tool_result; the control
 * plane's loop then continues to the final agent.message (the ama_worker lane). The file the bash
 * command writes lands in the worker's workdir, the platform starts no sandbox of its own, and
 * the worker force-stops its Work item when the session has gone idle.
 * Proves workers/src/selfHosted.ts with the Work API (core/src/work) and the claimed-session
 * bearer.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, waitFor, type TestPlatform } from './harness.js';
import { addModelCard, userMessage } from './turnHelpers.js';

const MODEL = 'env-worker-model';

let t: TestPlatform;
let workdir: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  await addModelCard(t, MODEL);
  workdir = mkdtempSync(join(tmpdir(), 'agentfleet-env-worker-'));
}, 60_000);
afterAll(async () => {
  await t?.close();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

describe('the official TypeScript EnvironmentWorker (ama_worker lane)', () => {
  it("serves a session whose model calls bash: the file lands in the worker's workdir", async () => {
    const env = await t.client.beta.environments.create({
      name: 'ts-worker',
      config: { type: 'self_hosted' },
    });
    const keyRes = await t.http('/v1/svc/api_keys', {
      method: 'POST',
      headers: BETA,
      json: { name: 'ts-worker', environment_id: env.id },
    });
    expect(keyRes.status, await keyRes.clone().text()).toBe(200);
    const environmentKey = ((await keyRes.json()) as { key: string }).key;
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
});
