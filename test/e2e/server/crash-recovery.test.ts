import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { realAdapterEnv, waitFor } from '../../kit/harness.js';

let model: ScriptedModelServer;
let dataDir: string;
beforeAll(async () => {
  model = await startScriptedModelServer({ defaultText: 'finished after recovery' });
  dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-crash-'));
});
afterAll(async () => {
  await model?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('kill -9 of the all-in-one process mid-turn', () => {
  it('loses no acknowledged write and the restarted process finishes the turn', async () => {
    const port = await freePort();
    const key = 'op-crash-test';
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEY: key,
      PLATFORM_ROOT_SECRET: 'crash-test-secret-0123456789abcdef0123',
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: model.url,
      LOG_LEVEL: 'error',
      RECOVERY_SCAN_MS: '200',
      SESSION_LEASE_TTL_MS: '3000',
      ...realAdapterEnv(),
    };
    const base = `http://127.0.0.1:${port}`;
    const call = async (path: string, body?: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method: body ? 'POST' : 'GET',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    let proc = await startProcess('all', env);
    try {
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (await call('/v1/agents', { name: 'a', model: 'slow-model' })).body.id;
      const sid = (await call('/v1/sessions', { agent: agentId, environment_id: envId })).body.id;
      model.script('slow-model', { steps: [{ text: 'partial' }, { delay_ms: 60_000 }] });
      const sent = await call(`/v1/sessions/${sid}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'survive this' }] }],
      });
      expect(sent.status).toBe(202);
      await waitFor(async () => model.requests.some((r) => r.model === 'slow-model'));
      expect((await call(`/v1/sessions/${sid}`)).body.status).toBe('running');
      await kill9(proc.child);

      proc = await startProcess('all', env);
      const events = await waitFor(async () => {
        const ev = (await call(`/v1/sessions/${sid}/events?limit=1000`)).body.data as any[];
        return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
      }, 60_000);
      const types = events.map((e) => e.type);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1)); // gap-free, no duplicates
      expect(types.filter((x) => x === 'user.message')).toHaveLength(1);
      expect(types).toContain('session.status_rescheduled');
      expect(events.find((e) => e.type === 'session.warning').warning).toBe('interrupted_stream');
      expect(types.at(-1)).toBe('session.status_idle');
      expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
        'finished after recovery',
      );
      // The recovered request saw the user's message.
      expect(
        model.requests.filter((r) => r.model === 'slow-model').at(-1)!.body.messages[0].content[0]
          .text,
      ).toBe('survive this');
      expect((await call(`/v1/sessions/${sid}`)).body.status).toBe('idle');
    } finally {
      await kill9(proc.child);
    }
  }, 90_000);
});
