/**
 * Recovery in the ama_worker lane (spec "Work item lifecycle" rule 5: old tool calls are never
 * replayed): kill -9 of the all-in-one process while a self_hosted session's turn runs a
 * control-plane tool (web_fetch, held at a loopback gate) beside a call the worker executes
 * (bash). The recovered turn answers only the orphaned control-plane call (error result,
 * session.warning orphan_tool_use); the worker's call stays open (no error result, no warning,
 * never executed here), the turn ends idle with requires_action naming it without calling the
 * model, and the worker's user.tool_result then completes the turn with each call appearing once
 * in the model's conversation. Proves workers/src/turn/recovery.ts and
 * workers/src/tools/selfHosted.ts.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { apiCaller, crashEnv, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { realAdapterEnv, waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-lane-crash-', { defaultText: 'done after the crash' });

describe('kill -9 while a self_hosted turn runs a control-plane tool beside a worker call', () => {
  it('the worker call stays open through recovery and is answered by the worker', async () => {
    let gateHit = false;
    const gate = createServer(() => {
      gateHit = true; // never answers: the process dies while web_fetch waits here
    });
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
    const gatePort = (gate.address() as { port: number }).port;
    const port = await freePort();
    const key = 'op-lane-crash';
    const env = {
      ...crashEnv({ port, dataDir: fx.dataDir, key, secret: 'lane-crash-secret-0123456789abcdef' }),
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: fx.model.url,
      SANDBOX_DRIVER: 'local',
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${gatePort}`,
      ...realAdapterEnv(),
    };
    const call = apiCaller(port, key);
    const { events, firstIdle, endTurn } = sessionEvents(call);
    let proc = await startProcess('all', env);
    try {
      const envId = (
        await call('/v1/environments', { name: 'sh', config: { type: 'self_hosted' } })
      ).body.id;
      const agent = await call('/v1/agents', {
        name: 'a',
        model: 'lane-crash-model',
        tools: [{ type: 'agent_toolset_20260401' }],
      });
      expect(agent.status, JSON.stringify(agent.body)).toBe(200);
      const sid = (await call('/v1/sessions', { agent: agent.body.id, environment_id: envId })).body
        .id;
      fx.model.script('lane-crash-model', {
        steps: [
          { tool_use: { name: 'bash', input: { command: 'echo on-the-worker' } } },
          { tool_use: { name: 'web_fetch', input: { url: `http://127.0.0.1:${gatePort}/slow` } } },
        ],
      });
      await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
      });
      const [bash, web] = await waitFor(async () => {
        const u = (await events(sid)).filter((e) => e.type === 'agent.tool_use');
        return u.length === 2 && gateHit ? u : null;
      }, 30_000);
      expect([bash.name, web.name]).toEqual(['bash', 'web_fetch']);
      await kill9(proc.child);

      proc = await startProcess('all', env);
      const recovered = await firstIdle(sid);
      expect(recovered.at(-1).stop_reason).toEqual({
        type: 'requires_action',
        event_ids: [bash.id],
      });
      const results = recovered.filter((e) => e.type === 'agent.tool_result');
      expect(results.map((e) => [e.tool_use_id, e.is_error])).toEqual([[web.id, true]]);
      const warnings = recovered.filter((e) => e.type === 'session.warning');
      expect(warnings.map((w) => [w.warning, w.tool_use_id])).toEqual([
        ['orphan_tool_use', web.id],
      ]);
      // Each call was recorded once; the model was not called again while the worker call waits.
      expect(recovered.filter((e) => e.type === 'agent.tool_use')).toHaveLength(2);
      expect(fx.model.requests.filter((r) => r.model === 'lane-crash-model')).toHaveLength(1);

      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [
          {
            type: 'user.tool_result',
            tool_use_id: bash.id,
            content: [{ type: 'text', text: 'on-the-worker' }],
          },
        ],
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const finished = await endTurn(sid);
      expect(finished.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'done after the crash',
      );
      const convo = fx.model.requests.filter((r) => r.model === 'lane-crash-model').at(-1)!.body
        .messages as any[];
      const blocks = convo.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
      expect(blocks.filter((b) => b.type === 'tool_use').map((b) => b.id)).toEqual([
        bash.id,
        web.id,
      ]);
      const answers = blocks.filter((b) => b.type === 'tool_result');
      expect(answers.map((b) => [b.tool_use_id, !!b.is_error]).sort()).toEqual(
        [
          [bash.id, false],
          [web.id, true],
        ].sort(),
      );
    } finally {
      await kill9(proc.child);
      gate.closeAllConnections();
      await new Promise<void>((r) => gate.close(() => r()));
    }
  }, 150_000);
});
