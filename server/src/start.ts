import type { FastifyInstance } from 'fastify';
import {
  createLogger,
  loadConfig,
  prepareDataDir,
  readDataDir,
  redactedConfig,
  watchOperatorKey,
  type DataDirPlan,
  type SandboxRuntime,
  type Role,
} from '@agentfleet/core';
import { startWorker, type RunningWorker } from '@agentfleet/workers';
import { buildApp, buildMetricsApp, buildOpsApp, graphqlPlugin } from '@agentfleet/gateway';
import { selectComponents, type ComponentOverrides } from './components.js';
import { createPlatform, type Platform } from './platform.js';
import { createSandboxRuntime } from './sandboxRuntime.js';
import { sandboxDriverFor } from './sandboxDriver.js';

export interface RunningServer {
  url: string;
  platform: Platform;
  app: FastifyInstance | null;
  /** http://host:port of the METRICS_LISTEN server (null when /metrics is on the API port). */
  metricsUrl: string | null;
  /** The worker's sandbox runtime (null on a gateway, or with SANDBOX_DRIVER=none). */
  sandboxes: SandboxRuntime | null;
  /** Where the root secret and operator key came from; the operator key generated (and stored) by this start, to print once. */
  secrets: Omit<DataDirPlan, 'config'>;
  close(): Promise<void>;
}

/**
 * The composition root's role wiring. Starts the platform in one process: the gateway (role
 * all|gateway) and the turn runner (role all|worker), on the components the config selects
 * (server/src/components.ts; `overrides` replace a port's default). Shutdown order: stop accepting HTTP,
 * stop the workers (finish in-flight turns), then close the adapters.
 *
 * Start-up sequence: parse the config (pure) → read the data dir's secrets (generating missing
 * ones in memory) → connect the adapters → worker roles: sandbox runtime (bubblewrap, limits)
 * and turn runner → build the HTTP app → store the generated secrets in the data dir → listen.
 * A failure before the data dir step writes no secret; a failure to listen removes the
 * operator key hash this start stored. An operator key from the data dir is then followed:
 * `agentfleet rotate-operator-key` takes effect on the running server (test/e2e/server/operator-key.test.ts).
 * Every harness-based test (test/kit/harness.ts) starts the platform through here.
 */
export async function startServer(
  role: Role,
  env: Record<string, string | undefined> = process.env,
  overrides: ComponentOverrides = {},
): Promise<RunningServer> {
  const plan = readDataDir(loadConfig(role, env));
  const { config } = plan;
  const log = createLogger(config.logLevel, { role });
  // The only place the config is logged: secrets redacted (core/src/config/config.ts).
  log.info('configuration', { config: redactedConfig(config) });
  const components = await selectComponents(config, overrides);
  let platform: Platform;
  try {
    platform = await createPlatform(config, components);
  } catch (err) {
    await components.close();
    throw err;
  }
  let runner: RunningWorker | null = null;
  let sandboxes: SandboxRuntime | null = null;
  if (role === 'all' || role === 'worker') {
    try {
      const driver = sandboxDriverFor(platform, log);
      if (driver) sandboxes = await createSandboxRuntime(platform, log, driver);
      runner = await startWorker({ services: platform, sandboxes, log });
    } catch (err) {
      await sandboxes?.close();
      await platform.close();
      throw err;
    }
  }
  let app: FastifyInstance | null = null;
  let url = '';
  let metricsApp: FastifyInstance | null = null;
  let metricsUrl: string | null = null;
  const abort = async () => {
    await app?.close();
    await metricsApp?.close();
    await runner?.stop();
    await sandboxes?.close();
    await platform.close();
  };
  try {
    // Every role listens: the gateway for the API, a worker for health, readiness and metrics.
    app =
      role === 'worker'
        ? await buildOpsApp(platform)
        : await buildApp(platform, { log, plugins: [graphqlPlugin] });
    if (config.metricsListen) metricsApp = await buildMetricsApp(platform);
  } catch (err) {
    await abort();
    throw err;
  }
  // Every check passed: only now are generated secrets stored (and the key then printed by the CLI).
  let prepared: ReturnType<typeof prepareDataDir>;
  try {
    prepared = prepareDataDir(plan);
  } catch (err) {
    await abort();
    throw err;
  }
  try {
    url = (await app.listen({ host: config.host, port: config.port })).replace(
      '[::1]',
      '127.0.0.1',
    );
    // METRICS_LISTEN: /metrics only there, without auth (and not on the API port).
    if (metricsApp && config.metricsListen) {
      metricsUrl = (
        await metricsApp.listen({
          host: config.metricsListen.host,
          port: config.metricsListen.port,
        })
      ).replace('[::1]', '127.0.0.1');
    }
  } catch (err) {
    prepared.undoOperatorKey();
    await abort();
    throw err;
  }
  const stopWatchingKey =
    plan.operatorKeySource === 'env'
      ? () => {}
      : watchOperatorKey(
          config.dataDir,
          config.operatorKeyHash,
          (hash) => {
            platform.auth.replaceOperatorKeyHash(hash);
            log.info('operator key rotated: the previous key is refused from now on');
          },
          (problem) => log.warn(problem),
        );
  const { config: _resolved, ...secrets } = plan;
  return {
    secrets,
    url,
    platform,
    app,
    metricsUrl,
    sandboxes,
    async close() {
      const step = async (name: string, f: () => Promise<unknown> | undefined) => {
        const t0 = Date.now();
        await f();
        log.debug('shutdown step', { step: name, ms: Date.now() - t0 });
      };
      // In-flight requests get the grace period; then whatever is still connected is cut.
      stopWatchingKey();
      await step('http', async () => {
        if (!app) return;
        const force = setTimeout(() => app!.server.closeAllConnections(), config.shutdownGraceMs);
        try {
          await app.close();
        } finally {
          clearTimeout(force);
        }
      });
      await step('metrics', async () => metricsApp?.close());
      await step('workers', () => runner?.stop());
      await step('sandboxes', () => sandboxes?.close());
      await step('adapters', () => platform.close());
    },
  };
}
