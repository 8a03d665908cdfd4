/**
 * The worker's start function: the turn runner with its tool executor, and the worker's jobs
 * (./jobs/: deployment scheduler, memory version sweeper, webhook sender, dream runner, eval
 * runner, sandbox backup sweeper), on the core services (./services.ts WorkerServices, which the composition root's
 * platform satisfies) and an optional sandbox runtime (server/src/start.ts).
 * Stopping stops the jobs, then finishes in-flight turns. Proven by every test that runs turns
 * (test/e2e/sdk/sdk-flow.test.ts, test/e2e/server/crash-recovery.test.ts,
 * test/e2e/fleet/fleet.test.ts) and the jobs' tests (named in each ./jobs/ file).
 */
import type { Logger, SandboxRuntime } from '@agentfleet/core';
import { startBackupSweeper } from './jobs/backupSweeper.js';
import { startDeploymentScheduler } from './jobs/deploymentScheduler.js';
import { startDreamRunner } from './jobs/dreamRunner.js';
import { startEvalRunner } from './jobs/evalRunner.js';
import { startMemoryVersionSweeper } from './jobs/memorySweeper.js';
import { startWebhookSender } from './jobs/webhookSender.js';
import { startIntegrationRouter } from './jobs/integrationRouter.js';
import type { WorkerServices } from './services.js';
import { ToolExecutor } from './tools/executor.js';
import { TurnRunner } from './turn/runner.js';

export interface RunningWorker {
  /** Stops taking turns and waits for the in-flight ones (up to the drain period). */
  stop(): Promise<void>;
}

export async function startWorker(opts: {
  /** The core services the worker uses (the composition root's platform satisfies it). */
  services: WorkerServices;
  /** null: no sandbox runtime (SANDBOX_DRIVER=none); sandbox tools then answer with an error. */
  sandboxes: SandboxRuntime | null;
  log: Logger;
  workerId?: string;
}): Promise<RunningWorker> {
  const { services, sandboxes, log } = opts;
  const tools = new ToolExecutor({
    sandbox: sandboxes?.manager ?? null,
    web: sandboxes?.web ?? null,
    history: (s) => services.events.all(s.tenantId, s.sessionId),
  });
  const runner = new TurnRunner(
    services,
    opts.workerId ?? `worker-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    log.child({ component: 'turn-runner' }),
    tools,
    sandboxes?.manager ?? null,
  );
  await runner.start();
  // Scheduled deployments: every worker ticks; one run per minute whatever the replica count.
  const scheduler = startDeploymentScheduler({
    tick: () => services.deployments.tick(),
    tickMs: services.config.deployments.tickMs,
    log: log.child({ component: 'deployment-scheduler' }),
  });
  // Memory version retention: 03:00 UTC daily; one replica sweeps (lease), on the service clock.
  const memorySweeper = startMemoryVersionSweeper({
    sweep: (nowMs) => services.memory.sweepVersions(nowMs),
    clock: () => services.memory.now(),
    leases: services.coordination.leases,
    owner: `memory-sweep-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    log: log.child({ component: 'memory-sweep' }),
  });
  // Outbound webhooks: first attempts from bus commands, retries from the due-time scan.
  const webhookSender = await startWebhookSender({
    bus: services.bus,
    webhooks: services.webhooks,
    scanMs: services.config.webhooks.scanMs,
    log: log.child({ component: 'webhooks' }),
  });
  // Integrations: provider events → thread sessions; finished turns → replies in the thread.
  const integrationRouter = await startIntegrationRouter({
    bus: services.bus,
    conversations: services.conversations,
    log: log.child({ component: 'integrations' }),
  });
  // Dreams: claimed by compare-and-swap from bus commands and the scan for lost or orphaned ones.
  const dreamRunner = await startDreamRunner({
    bus: services.bus,
    dreams: services.dreams,
    scanMs: services.config.dreams.scanMs,
    log: log.child({ component: 'dreams' }),
  });
  // Eval cases: started and judged from bus commands, re-driven by the scan.
  const evalRunner = await startEvalRunner({
    bus: services.bus,
    evals: services.evals,
    sandbox: sandboxes?.manager ?? null,
    scanMs: services.config.evals.scanMs,
    log: log.child({ component: 'evals' }),
  });
  // Sandbox backups older than the backup TTL: swept every hour by each worker with sandboxes.
  const backupSweeper = sandboxes
    ? startBackupSweeper({
        sandboxes: sandboxes.manager,
        log: log.child({ component: 'sandbox-manager' }),
      })
    : null;
  return {
    stop: async () => {
      await evalRunner.stop();
      await dreamRunner.stop();
      await integrationRouter.stop();
      await webhookSender.stop();
      await scheduler.stop();
      await memorySweeper.stop();
      await backupSweeper?.stop();
      await runner.stop();
    },
  };
}
