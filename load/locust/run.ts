/**
 * `npm run load`: Locust (load/locust/locustfile.py, the session flow and the REST reads)
 * against the platform, headless and bounded in time, then its CSV stats as a table.
 *
 * Without LOAD_BASE_URL it starts the scripted (zero-latency) model in a process of its own
 * (load/bench/procs.ts startModelProcess, the bench's model) and the whole platform in this
 * process, both on 127.0.0.1, and stops them at the end; the platform uses the real adapters
 * when KAFKA_BROKERS, MONGODB_URL and REDIS_URL are set (`npm run infra:up`). With LOAD_BASE_URL
 * it loads that platform instead, with LOAD_API_KEY (its model: LOAD_MODEL). A target off
 * loopback is loaded only when it is LOAD_BASE_URL (the locustfile refuses any other).
 *
 * Locust runs from the Python venv: AGENTFLEET_PYTHON, else the python that
 * test/kit/python/setup.sh prints (it builds the venv once from test/kit/python/requirements.txt).
 * Settings: LOAD_USERS (4), LOAD_SPAWN_RATE (= users), LOAD_SECONDS (20), LOAD_CSV_DIR (where
 * the CSV files go; a temp dir removed afterwards by default), and the locustfile's thresholds.
 * Exits with Locust's exit code: non-zero when a threshold is crossed, a request failed beyond
 * the ratio, or Locust itself failed. Test: test/e2e/fleet/load-locust.test.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatStatsTable, parseCsv } from './stats.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '../..');
const users = Number(process.env.LOAD_USERS ?? 4);
const spawnRate = Number(process.env.LOAD_SPAWN_RATE ?? users);
const seconds = Number(process.env.LOAD_SECONDS ?? 20);
if (!(users >= 1 && spawnRate > 0 && seconds >= 1))
  throw new Error('LOAD_USERS, LOAD_SPAWN_RATE and LOAD_SECONDS must be positive numbers');

function findPython(): string {
  if (process.env.AGENTFLEET_PYTHON) return process.env.AGENTFLEET_PYTHON;
  const setup = spawnSync('bash', [join(repo, 'test/kit/python/setup.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const python = setup.stdout.trim().split('\n').pop() ?? '';
  if (setup.status !== 0 || !existsSync(python))
    throw new Error(
      `test/kit/python/setup.sh failed (exit ${setup.status}); set AGENTFLEET_PYTHON`,
    );
  return python;
}

interface Target {
  url: string;
  apiKey: string;
  close(): Promise<void>;
}

async function startLocal(): Promise<Target> {
  const { startModelProcess } = await import('../bench/procs.js');
  const { startServer } = await import('@agentfleet/server');
  const model = await startModelProcess();
  const dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-locust-'));
  const apiKey = `load-${Math.random().toString(36).slice(2)}`;
  const real = !!(process.env.KAFKA_BROKERS && process.env.MONGODB_URL && process.env.REDIS_URL);
  const server = await startServer('all', {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    API_KEY: apiKey,
    PLATFORM_ROOT_SECRET: 'load-secret-0123456789abcdef0123456789abcd',
    ANTHROPIC_API_KEY: 'sk-load',
    ANTHROPIC_BASE_URL: model.url,
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: '10000000',
    ...(real
      ? {
          KAFKA_BROKERS: process.env.KAFKA_BROKERS!,
          MONGODB_URL: process.env.MONGODB_URL!,
          REDIS_URL: process.env.REDIS_URL!,
          FLEET_NAMESPACE: `load${Date.now().toString(36)}`,
        }
      : {}),
  });
  process.stdout.write(
    `platform ${server.url} (${real ? 'real adapters' : 'embedded adapters'})\n`,
  );
  return {
    url: server.url,
    apiKey,
    async close() {
      await server.close();
      await model.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const base = process.env.LOAD_BASE_URL?.replace(/\/+$/, '');
if (base && !process.env.LOAD_API_KEY) throw new Error('LOAD_BASE_URL needs LOAD_API_KEY');
const python = findPython();
const target: Target = base
  ? { url: base, apiKey: process.env.LOAD_API_KEY ?? '', close: async () => {} }
  : await startLocal();
const csvDir = process.env.LOAD_CSV_DIR ?? mkdtempSync(join(tmpdir(), 'agentfleet-locust-csv-'));
mkdirSync(csvDir, { recursive: true });
let code: number | null = null;
try {
  const args = [
    '-m',
    'locust',
    '-f',
    join(here, 'locustfile.py'),
    '--headless',
    '-u',
    String(users),
    '-r',
    String(spawnRate),
    '--run-time',
    `${seconds}s`,
    '--host',
    target.url,
    '--csv',
    join(csvDir, 'locust'),
    '--only-summary',
    '--loglevel',
    'WARNING',
  ];
  process.stdout.write(`locust: ${users} users for ${seconds} s against ${target.url}\n`);
  // Asynchronous: the platform answering Locust may run in this process's event loop.
  const child = spawn(python, args, {
    cwd: repo,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      LOAD_API_KEY: target.apiKey,
      ...(base ? { LOAD_BASE_URL: base } : {}),
    },
  });
  const watchdog = setTimeout(() => child.kill('SIGKILL'), (seconds + 90) * 1000);
  code = await new Promise<number | null>((resolve) => {
    child.on('error', (err) => {
      process.stderr.write(`locust did not start: ${err.message}\n`);
      resolve(null);
    });
    child.on('exit', (c, signal) => resolve(signal ? null : c));
  });
  clearTimeout(watchdog);
  const statsFile = join(csvDir, 'locust_stats.csv');
  if (existsSync(statsFile)) {
    process.stdout.write(`\n${formatStatsTable(parseCsv(readFileSync(statsFile, 'utf8')))}\n`);
    const failures = parseCsv(readFileSync(join(csvDir, 'locust_failures.csv'), 'utf8'));
    for (const f of failures)
      process.stdout.write(`failure: ${f.Method} ${f.Name} ×${f.Occurrences}: ${f.Error}\n`);
  } else process.stdout.write('no CSV stats were written\n');
  if (process.env.LOAD_CSV_DIR) process.stdout.write(`CSV files: ${csvDir}/locust_*.csv\n`);
} finally {
  await target.close();
  if (!process.env.LOAD_CSV_DIR) rmSync(csvDir, { recursive: true, force: true });
}
process.stdout.write(`locust exit code: ${code ?? 'killed'}\n`);
process.exit(code === 0 ? 0 : 1);
