/**
 * A call held by always_ask survives kill -9 of the all-in-one process mid-turn: the recovered
 * turn answers the orphaned allowed call with an error result (session.warning orphan_tool_use)
 * but leaves the held call open, ends idle with requires_action naming it, and the client's
 * allow then runs it. Proves the held-call rule of workers/src/turn/recovery.ts and
 * workers/src/tools/permissions.ts (state read from the event log, never from memory).
 */
import { describe, expect, it } from 'vitest';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { apiCaller, crashEnv, sessionEvents, useCrashFixture } from '../../kit/crashPlatform.js';
import { realAdapterEnv, waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-permission-crash-', { defaultText: 'done after the crash' });

describe('kill -9 while a held call waits beside a running allowed one', () => {
  it('the held call stays open through recovery and runs once allowed', async () => {
    const port = await freePort();
    const key = 'op-permission-crash';
    const env = {
      ...crashEnv({
        port,
        dataDir: fx.dataDir,
        key,
        secret: 'permission-crash-secret-0123456789abcdef',
      }),
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: fx.model.url,
      SANDBOX_DRIVER: 'local',
      ...realAdapterEnv(),
    };
    const call = apiCaller(port, key);
    const { events, firstIdle, endTurn } = sessionEvents(call);
    let proc = await startProcess('all', env);
    try {
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agent = await call('/v1/agents', {
        name: 'a',
        model: 'held-model',
        tools: [
          {
            type: 'agent_toolset_20260401',
            default_config: { permission_policy: { type: 'always_ask' } },
            configs: [{ name: 'bash', permission_policy: { type: 'always_allow' } }],
          },
        ],
      });
      expect(agent.status, JSON.stringify(agent.body)).toBe(200);
      const sid = (await call('/v1/sessions', { agent: agent.body.id, environment_id: envId })).body
        .id;
      fx.model.script('held-model', {
        steps: [
          {
            tool_use: { name: 'write', input: { file_path: '/workspace/held.txt', content: 'x' } },
          },
          { tool_use: { name: 'bash', input: { command: 'sleep 20' } } },
        ],
      });
      await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
      });
      // Both calls are recorded; the allowed bash call is running (sleep) when the process dies.
      const uses = await waitFor(async () => {
        const u = (await events(sid)).filter((e) => e.type === 'agent.tool_use');
        return u.length === 2 ? u : null;
      }, 30_000);
      const [write, bash] = uses;
      expect([write.evaluated_permission, bash.evaluated_permission]).toEqual(['ask', 'allow']);
      await kill9(proc.child);

      proc = await startProcess('all', env);
      const recovered = await firstIdle(sid);
      expect(recovered.at(-1).stop_reason).toEqual({
        type: 'requires_action',
        event_ids: [write.id],
      });
      const results = recovered.filter((e) => e.type === 'agent.tool_result');
      expect(results.map((e) => [e.tool_use_id, e.is_error])).toEqual([[bash.id, true]]);
      expect(
        recovered.find((e) => e.type === 'session.warning' && e.warning === 'orphan_tool_use')
          .tool_use_id,
      ).toBe(bash.id);
      // The model was not called again while the held call waits.
      expect(fx.model.requests.filter((r) => r.model === 'held-model')).toHaveLength(1);

      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.tool_confirmation', tool_use_id: write.id, result: 'allow' }],
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const finished = await endTurn(sid);
      const ran = finished.find(
        (e) => e.type === 'agent.tool_result' && e.tool_use_id === write.id,
      );
      expect([ran.is_error, ran.content[0].text]).toEqual([
        false,
        expect.stringMatching(/wrote 1 bytes/),
      ]);
      expect(finished.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'done after the crash',
      );
    } finally {
      await kill9(proc.child);
    }
  }, 150_000);
});
