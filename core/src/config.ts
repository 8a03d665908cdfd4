import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomToken, sha256 } from './crypto.js';

export type Role = 'all' | 'gateway' | 'worker';

/** One typed config object, parsed once at start. Nothing else reads process.env. */
export interface Config {
  role: Role;
  host: string;
  port: number;
  dataDir: string;
  /** SHA-256 of the operator/bootstrap API key. */
  operatorKeyHash: string;
  /** Set only when the key was generated on this start: print it once. */
  generatedOperatorKey: string | null;
  rootSecret: string;
  rootSecretSource: 'env' | 'generated' | 'data_dir';
  vendor: { apiKey: string; baseUrl?: string } | null;
  rateLimit: { perMinute: number };
  turn: { maxModelRequests: number; maxTokens: number; leaseTtlMs: number; recoveryScanMs: number; maxRecoveries: number; maxConcurrent: number };
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  infra: { kafkaBrokers: string | null; mongodbUrl: string | null; redisUrl: string | null; nomadAddr: string | null };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, problems: string[], min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name} must be an integer between ${min} and ${max} (got '${raw}')`);
    return def;
  }
  return n;
}

/** Reads a secret from the data dir, creating it (mode 0600) on first start. */
function persisted(dir: string, file: string, make: () => string): { value: string; created: boolean } {
  const p = join(dir, file);
  if (existsSync(p)) return { value: readFileSync(p, 'utf8').trim(), created: false };
  const value = make();
  writeFileSync(p, `${value}\n`, { mode: 0o600 });
  return { value, created: true };
}

export function loadConfig(role: Role, env: Env = process.env): Config {
  const problems: string[] = [];
  const infra = {
    kafkaBrokers: env.KAFKA_BROKERS || null,
    mongodbUrl: env.MONGODB_URL || null,
    redisUrl: env.REDIS_URL || null,
    nomadAddr: env.NOMAD_ADDR || null,
  };
  for (const [name, value] of Object.entries({ KAFKA_BROKERS: infra.kafkaBrokers, MONGODB_URL: infra.mongodbUrl, REDIS_URL: infra.redisUrl, NOMAD_ADDR: infra.nomadAddr })) {
    if (value) problems.push(`${name} is set, but this build has only the embedded adapters (fleet adapters are tracked in issue #3/#4); unset it`);
  }
  const dataDir = resolve(env.DATA_DIR || '.data');
  const port = int(env, 'PORT', 8080, problems, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) problems.push(`LOG_LEVEL must be one of debug, info, warn, error, silent`);
  const perMinute = int(env, 'RATE_LIMIT_PER_MINUTE', 6000, problems, 1);
  const turn = {
    maxModelRequests: int(env, 'TURN_MAX_MODEL_REQUESTS', 50, problems, 1, 1000),
    maxTokens: int(env, 'TURN_MAX_TOKENS', 8192, problems, 1, 1_000_000),
    leaseTtlMs: int(env, 'SESSION_LEASE_TTL_MS', 15_000, problems, 1000),
    recoveryScanMs: int(env, 'RECOVERY_SCAN_MS', 5_000, problems, 100),
    maxRecoveries: 5,
    maxConcurrent: int(env, 'WORKER_MAX_CONCURRENT_TURNS', 64, problems, 1, 10_000),
  };
  if (env.PLATFORM_ROOT_SECRET !== undefined && env.PLATFORM_ROOT_SECRET.length < 32) problems.push('PLATFORM_ROOT_SECRET must be at least 32 characters');
  if (problems.length) throw new ConfigError(problems);

  mkdirSync(dataDir, { recursive: true });
  let rootSecret = env.PLATFORM_ROOT_SECRET ?? '';
  let rootSecretSource: Config['rootSecretSource'] = 'env';
  if (!rootSecret) {
    const s = persisted(dataDir, 'root-secret', () => randomToken(48));
    rootSecret = s.value;
    rootSecretSource = s.created ? 'generated' : 'data_dir';
  }
  let generatedOperatorKey: string | null = null;
  let operatorKeyHash: string;
  if (env.API_KEY) operatorKeyHash = sha256(env.API_KEY);
  else {
    const key = `afk_op_${randomToken(24)}`;
    const h = persisted(dataDir, 'operator-key.sha256', () => sha256(key));
    operatorKeyHash = h.value;
    if (h.created) generatedOperatorKey = key;
  }
  const vendorKey = env.ANTHROPIC_API_KEY || env.VENDOR_API_KEY;
  return {
    role,
    host,
    port,
    dataDir,
    operatorKeyHash,
    generatedOperatorKey,
    rootSecret,
    rootSecretSource,
    vendor: vendorKey ? { apiKey: vendorKey, baseUrl: env.ANTHROPIC_BASE_URL || undefined } : null,
    rateLimit: { perMinute },
    turn,
    logLevel,
    infra,
  };
}
