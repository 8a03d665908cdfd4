import { Redis } from 'ioredis';
import type {
  Coordination,
  Lease,
  LeaseStore,
  PubSub,
  RateLimiter,
  RateLimitResult,
} from './port.js';

/**
 * Redis coordination adapter (ioredis): leases with fencing tokens, pub/sub and fixed-window
 * rate limits. Same semantics as the embedded adapter.
 *
 * Keys (under `keyPrefix`, default "agentfleet:"):
 *   lease:<key>        "<token>|<owner>", PX = lease TTL (SET NX semantics: exclusive even for the owner)
 *   fence:<key>        last fencing token handed out for <key>
 *   rl:<key>:<start>   request count (sum of weights) of the window starting at <start> (ms), expires after the window
 * Channels are prefixed the same way.
 *
 * Fencing tokens are max(last + 1, Redis server time in ms). The time floor keeps tokens strictly
 * increasing even when Redis loses the fence counter (restart without persistence, FLUSHALL,
 * eviction), which would otherwise hand out tokens that every fenced writer refuses as stale; it
 * also lets the fence key expire (after FENCE_TTL_MS) instead of piling up one key per session.
 *
 * Two connections: one for commands and PUBLISH, one dedicated subscriber connection with one
 * Redis SUBSCRIBE per channel, multiplexed to the local handlers. Both reconnect forever (capped
 * backoff); ioredis re-issues the SUBSCRIBEs after a reconnect (autoResubscribe). Messages
 * published while the subscriber is disconnected are lost (pub/sub is fire-and-forget).
 */

const FENCE_TTL_MS = 7 * 24 * 3600 * 1000;

/** Server time in ms, as a Lua number (exact: far below 2^53). */
const NOW_MS = `if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: lease, fence. ARGV: owner, ttlMs, fenceTtlMs. Returns the token, or nil while a lease is live.
// The token is last + 1, floored at the server clock in microseconds (about 1.8e15, exact in a
// double), so tokens keep increasing even after the fence counter was lost.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local token = last + 1
if now > token then token = now end
local tok = string.format('%.0f', token)
redis.call('SET', KEYS[2], tok, 'PX', math.max(tonumber(ARGV[3]), tonumber(ARGV[2])))
redis.call('SET', KEYS[1], tok .. '|' .. ARGV[1], 'PX', ARGV[2])
return tok`;

// KEYS: lease. ARGV: token, ttlMs. 1 when renewed, 0 when lost.
const RENEW = `
local v = redis.call('GET', KEYS[1])
if not v or string.match(v, '^(%d+)|') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// KEYS: lease. ARGV: token. Deletes only the holder's own lease.
const RELEASE = `
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^(%d+)|') == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0`;

// KEYS: lease. Returns {value, pttl} or nil.
const HOLDER = `
local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}`;

// KEYS: none (the key is built from the window). ARGV: prefix.. key base, windowMs.
// Returns {count, windowEndMs}. The window is taken from Redis time so all gateways agree.
const CONSUME = `
${NOW_MS}
local w = tonumber(ARGV[2])
local start = now - (now % w)
local key = ARGV[1] .. ':' .. string.format('%.0f', start)
local weight = tonumber(ARGV[3])
local n = redis.call('INCRBY', key, weight)
if n == weight then redis.call('PEXPIREAT', key, string.format('%.0f', start + w + 1000)) end
return {n, string.format('%.0f', start + w)}`;

type Commands = Redis & {
  afAcquire(
    lease: string,
    fence: string,
    owner: string,
    ttlMs: number,
    fenceTtlMs: number,
  ): Promise<string | null>;
  afRenew(lease: string, token: string, ttlMs: number): Promise<number>;
  afRelease(lease: string, token: string): Promise<number>;
  afHolder(lease: string): Promise<[string, number] | null>;
  afConsume(base: string, windowMs: number, weight: number): Promise<[number, string]>;
};

const parseValue = (v: string) => {
  const bar = v.indexOf('|');
  return { token: Number(v.slice(0, bar)), owner: v.slice(bar + 1) };
};

const positiveMs = (ms: number, what: string) => {
  if (!Number.isFinite(ms) || ms < 1)
    throw new RangeError(`${what} must be a positive number of milliseconds, got ${ms}`);
  return Math.ceil(ms);
};

class RedisLeaseStore implements LeaseStore {
  constructor(
    private readonly redis: Commands,
    private readonly prefix: string,
  ) {}
  private leaseKey = (key: string) => `${this.prefix}lease:${key}`;

  async acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const ttl = positiveMs(ttlMs, 'ttlMs');
    const t0 = Date.now();
    const tok = await this.redis.afAcquire(
      this.leaseKey(key),
      `${this.prefix}fence:${key}`,
      owner,
      ttl,
      FENCE_TTL_MS,
    );
    if (tok === null) return null;
    // Measured from before the call: never later than the real expiry in Redis.
    return { key, owner, token: Number(tok), expiresAt: t0 + ttl };
  }

  async renew(lease: Lease, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs(ttlMs, 'ttlMs');
    const t0 = Date.now();
    const ok = (await this.redis.afRenew(this.leaseKey(lease.key), String(lease.token), ttl)) === 1;
    if (ok) lease.expiresAt = t0 + ttl;
    return ok;
  }

  async release(lease: Lease): Promise<void> {
    await this.redis.afRelease(this.leaseKey(lease.key), String(lease.token));
  }

  async holder(key: string) {
    const t0 = Date.now();
    const r = await this.redis.afHolder(this.leaseKey(key));
    if (!r) return null;
    const [value, pttl] = r;
    // pttl is -1 only if someone removed the expiry by hand; -2 cannot happen inside the script.
    return {
      ...parseValue(value),
      expiresAt: pttl >= 0 ? t0 + Number(pttl) : Number.MAX_SAFE_INTEGER,
    };
  }
}

interface ChannelState {
  handlers: Set<(message: unknown) => void>;
  /** Settles once Redis confirmed the SUBSCRIBE. */
  ready: Promise<unknown>;
}

class RedisPubSub implements PubSub {
  private readonly channels = new Map<string, ChannelState>();

  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
  ) {
    sub.on('message', (channel: string, wire: string) => {
      const state = this.channels.get(channel);
      if (!state) return;
      // A snapshot: handlers (un)subscribing from inside a handler do not disturb this delivery.
      for (const handler of [...state.handlers]) {
        try {
          handler(JSON.parse(wire)); // every subscriber gets its own copy
        } catch (err) {
          console.error(`pubsub: handler for ${channel} threw`, err);
        }
      }
    });
  }

  async publish(channel: string, message: unknown): Promise<void> {
    const wire = JSON.stringify(message);
    if (wire === undefined)
      throw new TypeError(`pubsub: message for ${channel} is not JSON-serializable`);
    await this.pub.publish(this.prefix + channel, wire);
  }

  async subscribe(
    channel: string,
    handler: (message: unknown) => void,
  ): Promise<() => Promise<void>> {
    const full = this.prefix + channel;
    // A distinct wrapper per call, so subscribing the same function twice means two deliveries
    // and two independent unsubscribes, like the embedded adapter.
    const entry = (m: unknown) => handler(m);
    let state: ChannelState;
    for (;;) {
      const existing = this.channels.get(full);
      if (existing) state = existing;
      else {
        const created: ChannelState = { handlers: new Set(), ready: this.sub.subscribe(full) };
        state = created;
        this.channels.set(full, created);
        created.ready.catch(() => {
          // Forget a channel whose SUBSCRIBE failed, so that the next subscribe() retries it.
          if (this.channels.get(full) === created && created.handlers.size === 0)
            this.channels.delete(full);
        });
      }
      await state.ready;
      // While we waited, the last handler may have left and unsubscribed this state: start over.
      if (this.channels.get(full) === state) break;
    }
    state.handlers.add(entry);
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      const cur = this.channels.get(full);
      if (!cur || !cur.handlers.delete(entry) || cur.handlers.size > 0) return;
      this.channels.delete(full);
      await this.sub.unsubscribe(full).catch(() => {
        // Disconnected: after the reconnect ioredis resubscribes only what it still tracks, and
        // a stray message for a channel without handlers is dropped above.
      });
    };
  }
}

class RedisRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Commands,
    private readonly prefix: string,
  ) {}
  async consume(
    key: string,
    limit: number,
    windowMs: number,
    weight = 1,
  ): Promise<RateLimitResult> {
    const w = positiveMs(windowMs, 'windowMs');
    if (!Number.isInteger(weight) || weight < 1)
      throw new Error(`rate limiter: weight must be a positive integer (got ${weight})`);
    const [count, end] = await this.redis.afConsume(`${this.prefix}rl:${key}`, w, weight);
    const n = Number(count);
    return {
      allowed: n <= limit,
      limit,
      remaining: Math.max(0, limit - n),
      resetAt: Math.ceil(Number(end) / 1000),
    };
  }
}

export interface RedisCoordinationOptions {
  /** Prefix for every key and channel; default "agentfleet:". */
  keyPrefix?: string;
}

export async function createRedisCoordination(
  url: string,
  opts: RedisCoordinationOptions = {},
): Promise<Coordination> {
  const prefix = opts.keyPrefix ?? 'agentfleet:';
  const common = {
    lazyConnect: true,
    // Reconnect forever with a capped backoff; a command waits through ~10 reconnect attempts
    // (a few seconds) before it fails, rather than hanging for the whole outage.
    retryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2000),
    maxRetriesPerRequest: 10,
    connectTimeout: 5000,
  } as const;
  const redis = new Redis(url, {
    ...common,
    connectionName: 'agentfleet-coordination',
  }) as Commands;
  const sub = new Redis(url, {
    ...common,
    connectionName: 'agentfleet-subscriber',
    autoResubscribe: true,
  });
  // Connection errors are retried by ioredis; without a listener they would crash the process.
  let lastError: Error | undefined;
  const onError = (err: Error) => {
    lastError = err;
  };
  redis.on('error', onError);
  sub.on('error', onError);

  redis.defineCommand('afAcquire', { numberOfKeys: 2, lua: ACQUIRE });
  redis.defineCommand('afRenew', { numberOfKeys: 1, lua: RENEW });
  redis.defineCommand('afRelease', { numberOfKeys: 1, lua: RELEASE });
  redis.defineCommand('afHolder', { numberOfKeys: 1, lua: HOLDER });
  redis.defineCommand('afConsume', { numberOfKeys: 0, lua: CONSUME });

  try {
    await Promise.all([redis.connect(), sub.connect()]);
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    sub.disconnect();
    const cause = lastError ?? err;
    throw new Error(
      `redis coordination: cannot connect to ${redactUrl(url)}: ${(cause as Error).message}`,
      { cause },
    );
  }

  let closed = false;
  return {
    leases: new RedisLeaseStore(redis, prefix),
    pubsub: new RedisPubSub(redis, sub, prefix),
    rateLimiter: new RedisRateLimiter(redis, prefix),
    async healthy() {
      if (closed || redis.status !== 'ready' || sub.status !== 'ready') return false;
      try {
        // PING on the subscriber too: it queues behind any re-SUBSCRIBEs after a reconnect, so
        // healthy means the subscriptions are back.
        const [a, b] = await withTimeout(Promise.all([redis.ping(), sub.ping()]), 2000);
        return (
          a === 'PONG' &&
          (b === 'PONG' || (Array.isArray(b) && String(b[0]).toLowerCase() === 'pong'))
        );
      } catch {
        return false;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(
        [redis, sub].map(async (c) => {
          try {
            if (c.status === 'ready') await withTimeout(c.quit(), 2000);
          } catch {
            // fall through to disconnect
          }
          c.disconnect();
        }),
      );
    },
  };
}

const redactUrl = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
