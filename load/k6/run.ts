/**
 * `npm run load`: starts a scripted (zero-latency) model server and the platform on 127.0.0.1,
 * runs each k6 script against it, bounded in time, and stops everything. The platform uses the
 * real adapters when KAFKA_BROKERS, MONGODB_URL and REDIS_URL are set (see `npm run infra:up`).
 * k6 must be on PATH: `go install go.k6.io/k6@v1.8.1` (puts it in $(go env GOPATH)/bin).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '@agentfleet/server';

const here = fileURLToPath(new URL('.', import.meta.url));
const which = spawnSync('k6', ['version'], { encoding: 'utf8' });
if (which.error) {
  process.stderr.write(
    'k6 is not on PATH. Install it with: go install go.k6.io/k6@v1.8.1 (then add $(go env GOPATH)/bin to PATH)\n',
  );
  process.exit(1);
}
process.stdout.write(`${which.stdout.trim()}\n`);

const fixture = join(here, '../../test/fixtures/scriptedModel.ts');
const { startScriptedModelServer } = (await import(fixture)) as {
  startScriptedModelServer(): Promise<{ url: string; close(): Promise<void> }>;
};
const model = await startScriptedModelServer();
const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-k6-'));
const apiKey = `k6-${Math.random().toString(36).slice(2)}`;
const real = !!(process.env.KAFKA_BROKERS && process.env.MONGODB_URL && process.env.REDIS_URL);
const server = await startServer('all', {
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  API_KEY: apiKey,
  PLATFORM_ROOT_SECRET: 'k6-load-secret-0123456789abcdef0123456789',
  ANTHROPIC_API_KEY: 'sk-load',
  ANTHROPIC_BASE_URL: model.url,
  LOG_LEVEL: 'error',
  RATE_LIMIT_PER_MINUTE: '10000000',
  ...(real
    ? {
        KAFKA_BROKERS: process.env.KAFKA_BROKERS,
        MONGODB_URL: process.env.MONGODB_URL,
        REDIS_URL: process.env.REDIS_URL,
        FLEET_NAMESPACE: `k6${Date.now().toString(36)}`,
      }
    : {}),
});
process.stdout.write(`platform ${server.url} (${real ? 'real adapters' : 'embedded adapters'})\n`);
let failed = false;
try {
  for (const script of ['rest-reads.js', 'session-flow.js']) {
    process.stdout.write(`\n== k6 ${script}\n`);
    // Asynchronous: the platform answering k6 runs in this process's event loop.
    const child = spawn('k6', ['run', '--quiet', join(here, script)], {
      stdio: 'inherit',
      env: {
        ...process.env,
        BASE_URL: server.url,
        API_KEY: apiKey,
        DURATION: process.env.LOAD_DURATION ?? '20s',
      },
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), 5 * 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(timer);
    if (code !== 0) failed = true;
  }
} finally {
  await server.close();
  await model.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
