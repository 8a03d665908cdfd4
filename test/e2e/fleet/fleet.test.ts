import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { REAL, realAdapterEnv, waitFor } from '../../kit/harness.js';
import { withFaultLock } from '../../../core/test/faultLock.js';

/**
 * The fleet on real servers: 2 gateways + 2 workers as separate processes on Kafka, FerretDB
 * and Redis. Runs only when the real servers are configured (CI fails if it is skipped).
 */
describe.skipIf(!REAL)('fleet: 2 gateways + 2 workers on Kafka, FerretDB and Redis', () => {
  let model: ScriptedModelServer;
  let dataDir: string;
  let env: Record<string, string>;
  const key = 'op-fleet-test-key';
  const gateways: Array<{ url: string; child: ChildProcess }> = [];
  const workers: Array<{ child: ChildProcess; port: number }> = [];

  const startWorker = async () => {
    const port = await freePort();
    const p = await startProcess('worker', { ...env, PORT: String(port) });
    const w = { child: p.child, port };
    workers.push(w);
    return w;
  };
  const client = (i: number) =>
    new Anthropic({ apiKey: key, baseURL: gateways[i]!.url, maxRetries: 2, timeout: 30_000 });

  beforeAll(async () => {
    model = await startScriptedModelServer({ defaultText: 'fleet reply' });
    dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-fleet-'));
    env = {
      ...realAdapterEnv(undefined, { faultSet: true }),
      DATA_DIR: dataDir,
      API_KEY: key,
      PLATFORM_ROOT_SECRET: 'fleet-test-secret-0123456789abcdef0123456789',
      ANTHROPIC_API_KEY: 'sk-fleet',
      ANTHROPIC_BASE_URL: model.url,
      LOG_LEVEL: 'error',
      RECOVERY_SCAN_MS: '300',
      SESSION_LEASE_TTL_MS: '2000',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const p = await startProcess('gateway', { ...env, PORT: String(port) });
      gateways.push({ url: `http://127.0.0.1:${port}`, child: p.child });
    }
    await startWorker();
    await startWorker();
    // Both workers must have joined the consumer group before the first turn is timed.
    await new Promise((r) => setTimeout(r, 3000));
  }, 120_000);

  afterAll(async () => {
    for (const p of [...gateways, ...workers]) await kill9(p.child);
    await model?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function turn(createVia: number, streamVia: number, text: string) {
    const c = client(createVia);
    const env1 = await c.beta.environments.create({ name: `fleet-${text}` });
    const agent = await c.beta.agents.create({ name: `fleet-${text}`, model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env1.id });
    const stream = await client(streamVia).beta.sessions.events.stream(s.id);
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    return { s, seen };
  }

  it('the SDK creates sessions through both gateways and streams through the other; every turn completes', async () => {
    const results = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) => turn(i % 2, (i + 1) % 2, `hello-${i}`)),
    );
    for (const { seen } of results) {
      expect(seen.map((e) => e.type)).toEqual([
        'user.message',
        'session.status_running',
        'span.model_request_start',
        'agent.message',
        'span.model_request_end',
        'session.status_idle',
      ]);
      expect(seen.find((e) => e.type === 'agent.message').content[0].text).toBe('fleet reply');
    }
    // Readiness reflects broker, store and Redis connectivity on every process; metrics are served.
    for (const g of gateways)
      expect(await (await fetch(`${g.url}/readyz`)).json()).toMatchObject({
        ok: true,
        checks: { store: true, bus: true, coordination: true },
      });
    for (const w of workers) {
      expect((await fetch(`http://127.0.0.1:${w.port}/readyz`)).status).toBe(200);
      // /metrics answers only the operator key.
      expect((await fetch(`http://127.0.0.1:${w.port}/metrics`)).status).toBe(401);
      expect(
        await (
          await fetch(`http://127.0.0.1:${w.port}/metrics`, { headers: { 'x-api-key': key } })
        ).text(),
      ).toMatch(/agentfleet_turns_started_total/);
    }
  }, 120_000);

  it('kill -9 of the worker mid-turn: the other worker recovers the turn; nothing lost, seq gap-free, no duplicates', async () => {
    const c = client(0);
    const e = await c.beta.environments.create({ name: 'crash' });
    const agent = await c.beta.agents
      .create({ name: 'crash', model: 'slow-fleet-model' })
      .catch(async () => {
        await fetch(`${gateways[0]!.url}/v1/svc/model_cards`, {
          method: 'POST',
          headers: {
            'x-api-key': key,
            'content-type': 'application/json',
            'anthropic-beta': 'managed-agents-2026-04-01',
          },
          body: JSON.stringify({
            model_id: 'slow-fleet-model',
            provider: 'anthropic',
            model: 'slow-fleet-model',
            base_url: model.url,
            api_key: 'k',
          }),
        });
        return c.beta.agents.create({ name: 'crash', model: 'slow-fleet-model' });
      });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: e.id });
    model.script('slow-fleet-model', { steps: [{ text: 'partial' }, { delay_ms: 120_000 }] });
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'survive' }] }],
    });
    await waitFor(async () => model.requests.some((r) => r.model === 'slow-fleet-model'), 30_000);
    const owner = await runOwner(s.id);
    const victim = workers.find((w) => owner.startsWith(`worker-${w.child.pid}-`))!;
    expect(victim).toBeTruthy();
    await kill9(victim.child);
    workers.splice(workers.indexOf(victim), 1);
    const events = await waitFor(
      async () => {
        const all = [];
        for await (const ev of client(1).beta.sessions.events.list(s.id, { limit: 100 }))
          all.push(ev as any);
        return all.at(-1)?.type === 'session.status_idle' ? all : null;
      },
      60_000,
      250,
    );
    expect(events.map((x) => x.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((x) => x.type === 'user.message')).toHaveLength(1);
    expect(events.map((x) => x.type)).toContain('session.status_rescheduled');
    expect(events.filter((x) => x.type === 'agent.message').at(-1).content[0].text).toBe(
      'fleet reply',
    );
    await startWorker();
  }, 120_000);

  it('more than 5 recoveries force the session idle with session.status_idle', async () => {
    const c = client(1);
    const e = await c.beta.environments.create({ name: 'doomed' });
    await fetch(`${gateways[1]!.url}/v1/svc/model_cards`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        'anthropic-beta': 'managed-agents-2026-04-01',
      },
      body: JSON.stringify({
        model_id: 'hang-model',
        provider: 'anthropic',
        model: 'hang-model',
        base_url: model.url,
        api_key: 'k',
      }),
    });
    const agent = await c.beta.agents.create({ name: 'doomed', model: 'hang-model' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: e.id });
    const hang = { steps: [{ delay_ms: 120_000 }] };
    model.script('hang-model', hang, hang, hang, hang, hang, hang, hang, hang);
    await c.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'never finishes' }] }],
    });
    for (let kill = 1; kill <= 6; kill++) {
      const before = model.requests.filter((r) => r.model === 'hang-model').length;
      await waitFor(
        async () =>
          model.requests.filter((r) => r.model === 'hang-model').length >= kill &&
          (await runOwner(s.id).catch(() => '')) !== '',
        60_000,
        200,
      );
      const owner = await runOwner(s.id);
      const victim = workers.find((w) => owner.startsWith(`worker-${w.child.pid}-`));
      expect(victim, `kill ${kill} (${before} requests so far)`).toBeTruthy();
      await kill9(victim!.child);
      workers.splice(workers.indexOf(victim!), 1);
      await startWorker();
    }
    const events = await waitFor(
      async () => {
        const all = [];
        for await (const ev of c.beta.sessions.events.list(s.id, { limit: 100 }))
          all.push(ev as any);
        return all.at(-1)?.type === 'session.status_idle' ? all : null;
      },
      60_000,
      250,
    );
    expect(events.at(-1).stop_reason).toEqual({ type: 'retries_exhausted' });
    expect(events.filter((x) => x.type === 'session.status_rescheduled')).toHaveLength(5);
    expect(events.map((x) => x.seq)).toEqual(events.map((_, i) => i + 1));
    expect((await c.beta.sessions.retrieve(s.id)).status).toBe('idle');
  }, 240_000);

  it(
    'Redis and Kafka restarts during a run: every acknowledged message answered once, no manual action',
    () =>
      withFaultLock(async () => {
        const c = [client(0), client(1)];
        const e = await c[0]!.beta.environments.create({ name: 'restarts' });
        const agent = await c[0]!.beta.agents.create({
          name: 'restarts',
          model: 'claude-sonnet-4-5',
        });
        const sessions = await Promise.all(
          [0, 1, 2, 3].map((i) =>
            c[i % 2]!.beta.sessions.create({ agent: agent.id, environment_id: e.id }),
          ),
        );
        const acked: Array<{ sid: string; text: string }> = [];
        const send = async (round: number) => {
          for (const [i, s] of sessions.entries()) {
            const text = `r${round}-s${i}`;
            // A request that fails while a server restarts was not acknowledged: the client retries it.
            for (let attempt = 0; ; attempt++) {
              try {
                await c[(i + round) % 2]!.beta.sessions.events.send(s.id, {
                  events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
                });
                acked.push({ sid: s.id, text });
                break;
              } catch (err) {
                if (attempt > 40) throw err;
                await new Promise((r) => setTimeout(r, 500));
              }
            }
          }
        };
        await send(0);
        execSync(process.env.REDIS_RESTART_CMD!, { stdio: 'ignore' });
        await send(1);
        execSync(process.env.KAFKA_RESTART_CMD!, { stdio: 'ignore', timeout: 120_000 });
        await send(2);
        for (const s of sessions) {
          const mine = acked.filter((a) => a.sid === s.id).map((a) => a.text);
          const events = await waitFor(
            async () => {
              const all = [];
              for await (const ev of c[0]!.beta.sessions.events.list(s.id, { limit: 200 }))
                all.push(ev as any);
              const s2 = await c[1]!.beta.sessions.retrieve(s.id);
              const answered = all.filter((x) => x.type === 'session.status_idle').length;
              return s2.status === 'idle' &&
                all.at(-1)?.type === 'session.status_idle' &&
                answered >= 1 &&
                all.filter((x) => x.type === 'user.message').length === mine.length
                ? all
                : null;
            },
            120_000,
            500,
          );
          expect(events.map((x) => x.seq)).toEqual(events.map((_, i) => i + 1));
          expect(
            events
              .filter((x) => x.type === 'user.message')
              .map((x) => x.content[0].text)
              .sort(),
          ).toEqual([...mine].sort());
        }
      }),
    360_000,
  );

  async function runOwner(sid: string): Promise<string> {
    const url = env.MONGODB_URL!;
    const client = new MongoClient(url);
    try {
      await client.connect();
      const run = await client
        .db()
        .collection('runs')
        .findOne({ _id: sid as any });
      if (!run) throw new Error('no run record');
      return String(run.owner);
    } finally {
      await client.close();
    }
  }
});
