/**
 * `npm run load`: starts a scripted (zero-latency) model server and the platform on 127.0.0.1,
 * runs each k6 script against it, bounded in time, and stops everything. The platform uses the
 * real adapters when KAFKA_BROKERS, MONGODB_URL and REDIS_URL are set (see `npm run infra:up`).
 * k6: the first of `k6` on PATH, ~/.cache/agentfleet/bin/k6 and $(go env GOPATH)/bin/k6; when none
 * exists and Go is installed, it is built once into ~/.cache/agentfleet/bin with
 * `GOBIN=~/.cache/agentfleet/bin go install go.k6.io/k6@v1.8.1` (a few minutes; Go's caches are
 * under $HOME too). Each script's end-of-test summary is printed as k6 writes it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '@agentfleet/server';

const here = fileURLToPath(new URL('.', import.meta.url));
const K6_VERSION = 'v1.8.1';
const cacheBin = join(homedir(), '.cache', 'agentfleet', 'bin');

/** The k6 binary to run, its `k6 version` line; built into cacheBin with Go when missing. */
function findK6(): { bin: string; version: string } | null {
  const gopath = spawnSync('go', ['env', 'GOPATH'], { encoding: 'utf8' });
  const candidates = ['k6', join(cacheBin, 'k6')];
  if (!gopath.error && gopath.stdout.trim())
    candidates.push(join(gopath.stdout.trim(), 'bin', 'k6'));
  for (const bin of candidates) {
    const v = spawnSync(bin, ['version'], { encoding: 'utf8' });
    if (!v.error && v.status === 0) return { bin, version: v.stdout.trim() };
  }
  if (gopath.error) return null;
  process.stdout.write(
    `k6 not found: building it once into ${cacheBin} (go install go.k6.io/k6@${K6_VERSION})\n`,
  );
  const built = spawnSync('go', ['install', `go.k6.io/k6@${K6_VERSION}`], {
    stdio: 'inherit',
    env: { ...process.env, GOBIN: cacheBin },
  });
  if (built.status !== 0) return null;
  const v = spawnSync(join(cacheBin, 'k6'), ['version'], { encoding: 'utf8' });
  return v.status === 0 ? { bin: join(cacheBin, 'k6'), version: v.stdout.trim() } : null;
}

const k6 = findK6();
if (!k6) {
  process.stderr.write(
    `k6 not found and could not be built. Install it with: GOBIN=${cacheBin} go install go.k6.io/k6@${K6_VERSION}\n`,
  );
  process.exit(1);
}
process.stdout.write(`${k6.version} (${k6.bin})\n`);

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
    const child = spawn(k6.bin, ['run', '--quiet', join(here, script)], {
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
