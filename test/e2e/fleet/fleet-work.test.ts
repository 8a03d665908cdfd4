/**
 * The Work race and the deployment firing on the real fleet: 2 gateways + 2 workers as separate
 * processes (test/kit/process.ts startProcess) on Kafka, FerretDB and Redis, the scripted model as
 * the only mock. Runs only when the real servers are configured (REAL), like test/e2e/fleet/fleet.test.ts.
 *
 * Guarantees proved here ("In fleet mode, the same Work race and the same deployment
 * firing run across two worker processes"):
 * - "10 pollers over two gateways": a queued Work item is claimed by exactly one of 10 pollers,
 *   half of them on each gateway; the other 9 get null (core/src/work/work.ts tryClaim, the
 *   compare-and-swap on the shared store).
 * - "10 long-pollers over two gateways": an item enqueued through one gateway while 10 pollers
 *   long-poll (block_ms) on both is claimed exactly once (the enqueue wakes the pollers of every
 *   gateway over Redis pub/sub, core/src/work/waiters.ts). block_ms is capped at 999 ms, so the
 *   pollers re-poll until the item is taken, as the SDK's WorkPoller does; how fast the wake-up
 *   arrives is not asserted (no timed assertions).
 *   Both races poll with the largest reclaim_older_than_ms, so a poll delayed on a loaded machine
 *   cannot legitimately reclaim the unacknowledged item and look like a second winner.
 * - "one run per scheduled minute across two worker processes": both workers tick every second
 *   (DEPLOYMENT_TICK_MS=1000); a `* * * * *` deployment yields exactly one scheduled run for its
 *   first minute, whose session exists (core/src/deployments/scheduler.ts).
 *   This is the one test that waits for a real minute boundary (at most ~70 s): the workers are
 *   separate processes, so the injectable clock of test/e2e/deployments/deployments-runs.test.ts cannot reach
 *   them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';
import { REAL, realAdapterEnv, waitFor } from '../../kit/harness.js';
import {
  bearerClient,
  newSession,
  sessionsToken,
  workEnv,
  type WorkTarget,
} from '../../kit/workHelpers.js';

const POLLERS = 10;
/** The largest reclaim_older_than_ms (core/src/work/records.ts MAX_RECLAIM_MS): no reclaim here. */
const NO_RECLAIM = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!REAL)('fleet: the Work race and deployment firing across processes', () => {
  let model: ScriptedModelServer;
  let dataDir: string;
  const key = 'op-fleet-work-test-key';
  const gateways: Array<{ url: string; child: ChildProcess }> = [];
  const workers: ChildProcess[] = [];

  const client = (i: number) =>
    new Anthropic({ apiKey: key, baseURL: gateways[i]!.url, maxRetries: 2, timeout: 30_000 });
  /** Gateway i as the Work helpers see a platform. */
  const target = (i: number): WorkTarget => ({
    url: gateways[i]!.url,
    client: client(i),
    operatorKey: key,
  });

  beforeAll(async () => {
    model = await startScriptedModelServer({ defaultText: 'fleet work reply' });
    dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-fleet-work-'));
    const env = {
      ...realAdapterEnv(),
      DATA_DIR: dataDir,
      API_KEY: key,
      PLATFORM_ROOT_SECRET: 'fleet-work-test-secret-0123456789abcdef01234567',
      ANTHROPIC_API_KEY: 'sk-fleet-work',
      ANTHROPIC_BASE_URL: model.url,
      LOG_LEVEL: 'error',
      SANDBOX_DRIVER: 'none',
      DEPLOYMENT_TICK_MS: '1000',
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const p = await startProcess('gateway', { ...env, PORT: String(port) });
      gateways.push({ url: `http://127.0.0.1:${port}`, child: p.child });
    }
    for (let i = 0; i < 2; i++) {
      const p = await startProcess('worker', { ...env, PORT: String(await freePort()) });
      workers.push(p.child);
    }
  }, 120_000);

  afterAll(async () => {
    for (const child of [...gateways.map((g) => g.child), ...workers]) await kill9(child);
    await model?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const pollersOf = (envKey: string) =>
    Array.from({ length: POLLERS }, (_, i) => bearerClient(target(i % 2), envKey));

  it('10 pollers over two gateways: a queued item is claimed exactly once', async () => {
    const w = await workEnv(target(0), 'fleet-race');
    const session = await newSession(target(0), w);
    const results = await Promise.all(
      pollersOf(w.envKey).map((c, i) =>
        c.beta.environments.work.poll(w.envId, {
          reclaim_older_than_ms: NO_RECLAIM,
          'Anthropic-Worker-ID': `fleet-a-${i}`,
        }),
      ),
    );
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r === null)).toHaveLength(POLLERS - 1);
    const item = winners[0]!;
    expect(item.data.id).toBe(session.id);
    // Both gateways recorded their pollers in the shared store.
    expect(await client(1).beta.environments.work.stats(w.envId)).toMatchObject({
      depth: 0,
      pending: 1,
      workers_polling: POLLERS,
    });
    // The claim's token works on the other gateway too: it finishes the item.
    const owner = bearerClient(target(1), sessionsToken(item.secret)).beta.environments.work;
    expect(await owner.stop(item.id, { environment_id: w.envId, force: true })).toMatchObject({
      state: 'stopped',
    });
  }, 120_000);

  it('10 long-pollers over two gateways: an item enqueued while they wait is claimed exactly once', async () => {
    const w = await workEnv(target(0), 'fleet-long-poll');
    const pollers = pollersOf(w.envKey);
    type Work = NonNullable<Awaited<ReturnType<Anthropic['beta']['environments']['work']['poll']>>>;
    const won: Work[] = [];
    let nulls = 0;
    let taken = false;
    const giveUpAt = Date.now() + 60_000;
    const loops = pollers.map(async (c, i) => {
      while (!taken && Date.now() < giveUpAt) {
        const r = await c.beta.environments.work.poll(w.envId, {
          block_ms: 999,
          reclaim_older_than_ms: NO_RECLAIM,
          'Anthropic-Worker-ID': `fleet-b-${i}`,
        });
        if (r) {
          won.push(r);
          taken = true;
        } else nulls++;
      }
    });
    // Every long-poller has polled at least once (each is recorded before it first waits).
    await waitFor(
      async () =>
        (await client(1).beta.environments.work.stats(w.envId)).workers_polling === POLLERS,
      30_000,
      100,
    );
    const session = await newSession(target(0), w);
    await Promise.all(loops);
    expect(won.map((r) => r.data.id)).toEqual([session.id]);
    // Each of the 9 others answered null at least once (its poll in flight when the item went).
    expect(nulls).toBeGreaterThanOrEqual(POLLERS - 1);
    // Nothing is left to claim on either gateway.
    for (const c of pollers.slice(0, 2))
      expect(
        await c.beta.environments.work.poll(w.envId, { reclaim_older_than_ms: NO_RECLAIM }),
      ).toBeNull();
  }, 120_000);

  it('one run per scheduled minute across two worker processes', async () => {
    const c = client(1);
    const environment = await c.beta.environments.create({ name: 'fleet-deploy' });
    const agent = await c.beta.agents.create({ name: 'fleet-deploy', model: 'claude-sonnet-4-5' });
    const d = await c.beta.deployments.create({
      name: 'every minute on the fleet',
      agent: agent.id,
      environment_id: environment.id,
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'tick' }] }],
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    });
    const minuteIso = d.schedule!.upcoming_runs_at![0]!;
    const minute = Date.parse(minuteIso);
    expect(minute - Date.now()).toBeLessThanOrEqual(60_000);
    const scheduledRuns = async () => {
      const out: Anthropic.Beta.DeploymentRuns.BetaManagedAgentsDeploymentRun[] = [];
      for await (const r of c.beta.deploymentRuns.list({
        deployment_id: d.id,
        trigger_type: 'schedule',
      }))
        out.push(r);
      return out;
    };
    try {
      // Both workers tick every second; wait for the minute's run, then give the other worker
      // several more ticks (until 8 s past the minute) to fire it a second time if it could.
      await waitFor(
        async () => ((await scheduledRuns()).length > 0 ? true : null),
        minute + 45_000 - Date.now(),
        500,
      );
      await sleep(Math.max(0, minute + 8_000 - Date.now()));
      const runs = await scheduledRuns();
      const ofMinute = runs.filter((r) => (r.trigger_context as any).scheduled_at === minuteIso);
      expect(ofMinute).toHaveLength(1);
      // Nothing fired for any other minute but, at most, the next one if this ran long.
      for (const r of runs)
        expect([minuteIso, new Date(minute + 60_000).toISOString()]).toContain(
          (r.trigger_context as any).scheduled_at,
        );
      const run = ofMinute[0]!;
      expect(run.error).toBeNull();
      const session = await client(0).beta.sessions.retrieve(run.session_id!);
      expect(session.agent.id).toBe(agent.id);
      expect(session.environment_id).toBe(environment.id);
    } finally {
      // Nothing else fires once the test is done.
      expect((await c.beta.deployments.pause(d.id)).status).toBe('paused');
    }
  }, 150_000);
});
