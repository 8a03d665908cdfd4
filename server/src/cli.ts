#!/usr/bin/env node
/**
 * The agentfleet command: `agentfleet [all|gateway|worker]` starts a role (server/src/start.ts
 * has the start-up sequence); `agentfleet rotate-operator-key` is the admin command for an
 * operator who lost the key printed on first start (embedded data dir only; refused when API_KEY
 * is set). Start-up failures are one message and exit code 1 (test/e2e/server/startup.test.ts); the key a
 * start generated is printed once (test/e2e/server/operator-key.test.ts).
 */
import {
  ConfigError,
  loadConfig,
  OPERATOR_KEY_HASH_FILE,
  rotateOperatorKey,
  type Role,
} from '@agentfleet/core';
import { startServer } from './start.js';

const USAGE = 'usage: agentfleet [all|gateway|worker]\n       agentfleet rotate-operator-key\n';
const fail = (err: unknown): never => {
  // Start-up failures (configuration, a missing sandbox runtime, an unreachable server) are
  // reported as one clear message, not a stack trace.
  process.stderr.write(
    `agentfleet: ${err instanceof ConfigError ? err.message : ((err as Error)?.message ?? String(err))}\n`,
  );
  process.exit(1);
};

// The runtime the project pins and tests (docs/development.md, the runtime): the embedded store's binding
// needs Node 22 or newer, and only 24 is tested. npm scripts run on the pinned one whatever node
// ran `npm install`; this is for a start with another node on the PATH.
const MIN_NODE_MAJOR = 24;
if (Number(process.version.slice(1).split('.')[0]) < MIN_NODE_MAJOR)
  fail(
    new Error(
      `Node.js ${process.version} is too old: agentfleet runs on Node.js ${MIN_NODE_MAJOR} LTS. ` +
        '`npm start` (and every npm script) uses the one `npm install` put in node_modules/.bin; ' +
        `to run the CLI yourself, put Node.js ${MIN_NODE_MAJOR} on the PATH.`,
    ),
  );

// `npm start -- rotate-operator-key` runs `cli.ts all rotate-operator-key`: the command may follow the default role.
const args = process.argv.slice(2);
const command =
  args.length === 2 && args[0] === 'all' && args[1] === 'rotate-operator-key'
    ? args[1]
    : args.length <= 1
      ? (args[0] ?? 'all')
      : 'usage';
if (command === 'rotate-operator-key') {
  try {
    const config = loadConfig('all');
    if (config.operatorKeyHash !== null) {
      fail(
        new Error(
          'API_KEY is set: the operator key is configured by the environment; set a new API_KEY instead (rotate-operator-key only replaces the key stored in the data dir)',
        ),
      );
    }
    const key = rotateOperatorKey(config.dataDir);
    process.stdout.write(
      [
        `New operator API key (shown only once; only its hash is stored in ${config.dataDir}/${OPERATOR_KEY_HASH_FILE}):`,
        `  ${key}`,
        'The previous key is refused from now on (a server running on this data dir re-reads the hash within seconds).',
        '',
      ].join('\n'),
    );
    process.exit(0);
  } catch (err) {
    fail(err);
  }
}
if (!['all', 'gateway', 'worker'].includes(command)) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const role = command as Role;

try {
  const server = await startServer(role);
  const { config } = server.platform;
  const lines = [`agentfleet ${role} started`];
  const metrics = server.metricsUrl
    ? `${server.metricsUrl}/metrics (no auth: keep this address private)`
    : `${server.url}/metrics (operator key)`;
  if (role === 'worker') lines.push(`  ops:     ${server.url}/healthz, ${server.url}/readyz`);
  else
    lines.push(
      `  REST:    ${server.url}/v1`,
      `  GraphQL: ${server.url}/graphql`,
      `  health:  ${server.url}/healthz (readiness /readyz)`,
    );
  lines.push(`  metrics: ${metrics}`);
  const { infra, fleet } = config;
  lines.push(
    `  adapters: store=${infra.mongodbUrl ? `mongodb${fleet.perTenantDb ? ' (database per tenant)' : ''}` : 'embedded'}, bus=${infra.kafkaBrokers ? 'kafka' : 'embedded'}, coordination=${infra.redisUrl ? 'redis' : 'embedded'}`,
  );
  lines.push(`  data:    ${config.dataDir}`);
  const { secrets } = server;
  if (secrets.generatedOperatorKey) {
    lines.push(
      '',
      `  Operator API key (generated now and shown only once; only its hash is stored in ${config.dataDir}):`,
      `    ${secrets.generatedOperatorKey}`,
    );
  } else
    lines.push(
      `  auth:    send the operator key (API_KEY, or the one printed on first start; lost it? 'npm start -- rotate-operator-key') as the x-api-key header`,
    );
  if (secrets.rootSecretSource === 'generated')
    lines.push(
      `  PLATFORM_ROOT_SECRET was not set: generated one into ${config.dataDir}/root-secret (keep it; losing it makes stored secrets unreadable)`,
    );
  if (!config.vendor)
    lines.push(
      '  models:  no ANTHROPIC_API_KEY set; create a model card (POST /v1/svc/model_cards) before running agents',
    );
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
  fail(err);
}
