import { ConfigError, type Role } from '@agentfleet/core';
import { startServer } from './server.js';

const role = (process.argv[2] ?? 'all') as Role;
if (!['all', 'gateway', 'worker'].includes(role)) {
  process.stderr.write(`usage: agentfleet [all|gateway|worker]\n`);
  process.exit(2);
}

try {
  const server = await startServer(role);
  const { config } = server.platform;
  const lines = [`agentfleet ${role} started`];
  const metrics = server.metricsUrl ? `${server.metricsUrl}/metrics (no auth: keep this address private)` : `${server.url}/metrics (operator key)`;
  if (role === 'worker') lines.push(`  ops:     ${server.url}/healthz, ${server.url}/readyz`);
  else lines.push(`  REST:    ${server.url}/v1`, `  GraphQL: ${server.url}/graphql`, `  health:  ${server.url}/healthz (readiness /readyz)`);
  lines.push(`  metrics: ${metrics}`);
  const { infra, fleet } = config;
  lines.push(`  adapters: store=${infra.mongodbUrl ? `mongodb${fleet.perTenantDb ? ' (database per tenant)' : ''}` : 'embedded'}, bus=${infra.kafkaBrokers ? 'kafka' : 'embedded'}, coordination=${infra.redisUrl ? 'redis' : 'embedded'}`);
  lines.push(`  data:    ${config.dataDir}`);
  if (config.generatedOperatorKey) {
    lines.push('', `  Operator API key (generated now and shown only once; only its hash is stored in ${config.dataDir}):`, `    ${config.generatedOperatorKey}`);
  } else lines.push(`  auth:    send the operator key (API_KEY, or the one printed on first start) as the x-api-key header`);
  if (config.rootSecretSource === 'generated') lines.push(`  PLATFORM_ROOT_SECRET was not set: generated one into ${config.dataDir}/root-secret (keep it; losing it makes stored secrets unreadable)`);
  if (!config.vendor) lines.push('  models:  no ANTHROPIC_API_KEY set; create a model card (POST /v1/svc/model_cards) before running agents');
  process.stdout.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal}: shutting down\n`);
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
} catch (err) {
  // Start-up failures (configuration, a missing sandbox runtime, an unreachable server) are
  // reported as one clear message, not a stack trace.
  process.stderr.write(`agentfleet: ${err instanceof ConfigError ? err.message : (err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
}
