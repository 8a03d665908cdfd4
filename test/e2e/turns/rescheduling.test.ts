/**
 * The `rescheduling` session status (SDK BetaManagedAgentsSession.status) and the
 * session.status_rescheduled event, with real processes: two sessions are mid-turn when the
 * all-in-one process is killed (kill -9). The restarted process runs one turn at a time
 * (WORKER_MAX_CONCURRENT_TURNS=1), so while it resumes one orphaned turn the other waits:
 * - the waiting session reads `rescheduling` (session retrieve through the official SDK, and
 *   the list's `statuses[]=rescheduling` filter), and its log ends with one
 *   session.status_rescheduled;
 * - once resumed it reads `running`, its log has exactly one session.status_rescheduled followed
 *   by session.status_running, and the turn ends idle.
 * The waiting is made by the slot limit, not by timing (workers/src/turn/recovery.ts).
 */
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { crashEnv, useCrashFixture } from '../../kit/crashPlatform.js';
import { waitFor } from '../../kit/harness.js';

const fx = useCrashFixture('agentfleet-resched-', { defaultText: 'done' });

const slow = { steps: [{ text: 'partial' }, { delay_ms: 60_000 }] };

describe('rescheduling: an orphaned turn waiting for a worker', () => {
  it('reads rescheduling until a worker resumes it, then running, then idle', async () => {
    const port = await freePort();
    const key = 'op-resched-test';
    const env = {
      ...crashEnv({
        port,
        dataDir: fx.dataDir,
        key,
        secret: 'resched-test-secret-0123456789abcdef0123',
      }),
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: fx.model.url,
    };
    const client = new Anthropic({
      apiKey: key,
      baseURL: `http://127.0.0.1:${port}`,
      maxRetries: 0,
      timeout: 20_000,
    });
    const eventsOf = async (sid: string) => {
      const out: any[] = [];
      for await (const e of client.beta.sessions.events.list(sid, { limit: 1000 })) out.push(e);
      return out;
    };
    const statusOf = async (sid: string) => (await client.beta.sessions.retrieve(sid)).status;
    let proc = await startProcess('all', env);
    try {
      const envId = (await client.beta.environments.create({ name: 'e' })).id;
      const sids: string[] = [];
      for (const m of ['resched-a', 'resched-b']) {
        const agent = await client.beta.agents.create({ name: m, model: m });
        sids.push(
          (await client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id,
        );
        // First request: cut by the kill. Second (the resumed turn): slow until interrupted.
        fx.model.script(m, slow, slow);
      }
      for (const sid of sids)
        await client.beta.sessions.events.send(sid, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
        });
      const requestsOf = (m: string) => fx.model.requests.filter((r) => r.model === m).length;
      await waitFor(async () => requestsOf('resched-a') === 1 && requestsOf('resched-b') === 1);
      expect(await Promise.all(sids.map(statusOf))).toEqual(['running', 'running']);
      await kill9(proc.child);

      proc = await startProcess('all', { ...env, WORKER_MAX_CONCURRENT_TURNS: '1' });
      // One orphaned turn is resumed (its second model request), the other waits for the slot.
      const [resumed, waiting] = await waitFor(async () => {
        const st = await Promise.all(sids.map(statusOf));
        const i = st.indexOf('running');
        const j = st.indexOf('rescheduling');
        if (i < 0 || j < 0 || requestsOf(['resched-a', 'resched-b'][i]!) !== 2) return null;
        return [sids[i]!, sids[j]!];
      }, 30_000);
      expect(await statusOf(waiting)).toBe('rescheduling');
      const listed: string[] = [];
      for await (const s of client.beta.sessions.list({ statuses: ['rescheduling'] }))
        listed.push(s.id);
      expect(listed).toEqual([waiting]);
      const running: string[] = [];
      for await (const s of client.beta.sessions.list({ statuses: ['running'] }))
        running.push(s.id);
      expect(running).toEqual([resumed]);
      const waitingLog = await eventsOf(waiting);
      expect(waitingLog.at(-1).type).toBe('session.status_rescheduled');
      expect(waitingLog.filter((e) => e.type === 'session.status_rescheduled')).toHaveLength(1);

      // Free the slot: the waiting turn is resumed next.
      const interrupt = (sid: string) =>
        client.beta.sessions.events.send(sid, { events: [{ type: 'user.interrupt' }] });
      await interrupt(resumed);
      await waitFor(async () => (await statusOf(waiting)) === 'running', 30_000);
      await interrupt(waiting);
      for (const sid of sids) {
        await waitFor(async () => (await statusOf(sid)) === 'idle', 30_000);
        const types = (await eventsOf(sid)).map((e) => e.type);
        expect(types.filter((t) => t === 'session.status_rescheduled')).toHaveLength(1);
        const at = types.indexOf('session.status_rescheduled');
        expect(types.slice(at + 1)).toContain('session.status_running');
        expect(types.at(-1)).toBe('session.status_idle');
      }
    } finally {
      await kill9(proc.child);
    }
  }, 120_000);
});
