/** Run settings, from the environment. BENCH_SECONDS scales every timed measurement. */
export interface BenchSettings {
  /** Seconds per timed measurement (BENCH_SECONDS, default 8: about 90 s for the whole run). */
  seconds: number;
  /** Warm-up before each HTTP load measurement, ms (a quarter of `seconds`, 0.25–2 s). */
  warmupMs: number;
  /** Keep-alive connections of the HTTP load loop (BENCH_CONNECTIONS, default 32). */
  connections: number;
  /** Sequential turns to time (BENCH_TURNS, default 200; also bounded by `seconds`). */
  turns: number;
  /** Sessions driven concurrently (BENCH_SESSIONS, default 8). */
  sessions: number;
  /** Fixed latency of each scripted model response in the worker-process section, ms (BENCH_MODEL_DELAY_MS, default 50). */
  modelDelayMs: number;
  /** SSE subscribers of the fan-out section (BENCH_FANOUT_SUBSCRIBERS, default 1000). */
  fanoutSubscribers: number;
  /** Where the fan-out section's platform runs (BENCH_FANOUT_PLATFORM): 'process' (default, `server/src/cli.ts all`, like `npm start`) or 'inprocess'. */
  fanoutPlatform: 'process' | 'inprocess';
  /** Events in the store-scale section's store (BENCH_STORE_EVENTS, default 1,000,000). */
  storeEvents: number;
  /** Sessions behind the console section's session list (BENCH_CONSOLE_SESSIONS, default 1000). */
  consoleSessions: number;
}

function num(
  env: Record<string, string | undefined>,
  name: string,
  def: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new Error(`${name} must be a number between ${min} and ${max} (got '${raw}')`);
  return n;
}

function fanoutPlatform(raw: string | undefined): 'process' | 'inprocess' {
  if (raw === undefined || raw === '' || raw === 'process') return 'process';
  if (raw === 'inprocess') return 'inprocess';
  throw new Error(`BENCH_FANOUT_PLATFORM must be 'process' or 'inprocess' (got '${raw}')`);
}

export function loadSettings(env: Record<string, string | undefined> = process.env): BenchSettings {
  const seconds = num(env, 'BENCH_SECONDS', 8, 0.5, 600);
  return {
    seconds,
    warmupMs: Math.round(Math.min(2, Math.max(0.25, seconds / 4)) * 1000),
    connections: Math.floor(num(env, 'BENCH_CONNECTIONS', 32, 1, 1024)),
    turns: Math.floor(num(env, 'BENCH_TURNS', 200, 1, 100_000)),
    sessions: Math.floor(num(env, 'BENCH_SESSIONS', 8, 1, 256)),
    modelDelayMs: Math.floor(num(env, 'BENCH_MODEL_DELAY_MS', 50, 0, 10_000)),
    fanoutSubscribers: Math.floor(num(env, 'BENCH_FANOUT_SUBSCRIBERS', 1000, 1, 10_000)),
    fanoutPlatform: fanoutPlatform(env.BENCH_FANOUT_PLATFORM),
    storeEvents: Math.floor(num(env, 'BENCH_STORE_EVENTS', 1_000_000, 1000, 20_000_000)),
    consoleSessions: Math.floor(num(env, 'BENCH_CONSOLE_SESSIONS', 1000, 1, 100_000)),
  };
}
