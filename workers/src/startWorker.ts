/**
 * The worker's start function: the turn runner with its tool executor, on a platform and an
 * optional sandbox runtime the composition root built (server/src/start.ts). Stopping finishes
 * in-flight turns first. Proven by every test that runs turns (test/sdk-flow.test.ts,
 * test/crash-recovery.test.ts, test/fleet.test.ts).
 */
import {
  startDeploymentScheduler,
  startMemoryVersionSweeper,
  type Logger,
  type Platform,
  type SandboxRuntime,
} from '@agentfleet/core';
import { ToolExecutor } from './tools.js';
import { TurnRunner } from './turnRunner.js';

export interface RunningWorker {
  /** Stops taking turns and waits for the in-flight ones (up to the drain period). */
  stop(): Promise<void>;
}

export async function startWorker(opts: {
  platform: Platform;
  /** null: no sandbox runtime (SANDBOX_DRIVER=none); sandbox tools then answer with an error. */
  sandboxes: SandboxRuntime | null;
  log: Logger;
  workerId?: string;
}): Promise<RunningWorker> {
  const { platform, sandboxes, log } = opts;
  const tools = new ToolExecutor({
    sandbox: sandboxes?.manager ?? null,
    web: sandboxes?.web ?? null,
    history: (s) => platform.events.all(s.tenantId, s.sessionId),
  });
  const runner = new TurnRunner(
    platform,
    opts.workerId ?? `worker-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    log.child({ component: 'turn-runner' }),
    tools,
    sandboxes?.manager ?? null,
  );
  await runner.start();
  // Scheduled deployments: every worker ticks; one run per minute whatever the replica count.
  const scheduler = startDeploymentScheduler({
    tick: () => platform.deployments.tick(),
    tickMs: platform.config.deployments.tickMs,
    log: log.child({ component: 'deployment-scheduler' }),
  });
  // Memory version retention: 03:00 UTC daily; one replica sweeps (lease), on the service clock.
  const memorySweeper = startMemoryVersionSweeper({
    sweep: (nowMs) => platform.memory.sweepVersions(nowMs),
    clock: () => platform.memory.now(),
    leases: platform.coordination.leases,
    owner: `memory-sweep-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    log: log.child({ component: 'memory-sweep' }),
  });
  // Outbound webhooks: first attempts from bus commands, retries from the due-time scan.
  const webhookSender = await platform.webhooks.startSender(log.child({ component: 'webhooks' }));
  // Dreams: claimed by compare-and-swap from bus commands and the scan for lost or orphaned ones.
  const dreamRunner = await platform.dreams.startRunner(log.child({ component: 'dreams' }));
  return {
    stop: async () => {
      await dreamRunner.stop();
      await webhookSender.stop();
      await scheduler.stop();
      await memorySweeper.stop();
      await runner.stop();
    },
  };
}
