import { EventEmitter } from 'node:events';
import type {
  Coordination,
  Lease,
  LeaseStore,
  PubSub,
  RateLimiter,
  RateLimitResult,
} from './port.js';

/** In-process leases with fencing tokens; same semantics as the Redis adapter. */
export class MemoryLeaseStore implements LeaseStore {
  private readonly leases = new Map<string, { owner: string; token: number; expiresAt: number }>();
  private readonly fences = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}

  async acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const cur = this.leases.get(key);
    const t = this.now();
    // Exclusive like Redis SET NX: a live lease cannot be taken again, not even by its owner.
    if (cur && cur.expiresAt > t) return null;
    const token = (this.fences.get(key) ?? 0) + 1;
    this.fences.set(key, token);
    const lease = { owner, token, expiresAt: t + ttlMs };
    this.leases.set(key, lease);
    return { key, ...lease };
  }
  async renew(lease: Lease, ttlMs: number): Promise<boolean> {
    const cur = this.leases.get(lease.key);
    const t = this.now();
    if (!cur || cur.token !== lease.token || cur.expiresAt <= t) return false;
    cur.expiresAt = t + ttlMs;
    lease.expiresAt = cur.expiresAt;
    return true;
  }
  async release(lease: Lease): Promise<void> {
    const cur = this.leases.get(lease.key);
    if (cur && cur.token === lease.token) this.leases.delete(lease.key);
  }
  async holder(key: string) {
    const cur = this.leases.get(key);
    return cur && cur.expiresAt > this.now() ? { ...cur } : null;
  }
}

export class MemoryPubSub implements PubSub {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  async publish(channel: string, message: unknown): Promise<void> {
    // Subscribers get their own copy, as they would over the wire.
    const wire = JSON.stringify(message);
    this.emitter.emit(channel, wire);
  }
  async subscribe(channel: string, handler: (message: unknown) => void) {
    const listener = (wire: string) => handler(JSON.parse(wire));
    this.emitter.on(channel, listener);
    return async () => {
      this.emitter.off(channel, listener);
    };
  }
}

/** Fixed-window counter per key. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  async consume(
    key: string,
    limit: number,
    windowMs: number,
    weight = 1,
  ): Promise<RateLimitResult> {
    if (!Number.isInteger(weight) || weight < 1)
      throw new Error(`rate limiter: weight must be a positive integer (got ${weight})`);
    const now = Date.now();
    const start = Math.floor(now / windowMs) * windowMs;
    let w = this.windows.get(key);
    if (!w || w.start !== start) this.windows.set(key, (w = { start, count: 0 }));
    w.count += weight;
    if (this.windows.size > 10_000)
      for (const [k, v] of this.windows) if (v.start !== start) this.windows.delete(k);
    return {
      allowed: w.count <= limit,
      limit,
      remaining: Math.max(0, limit - w.count),
      resetAt: Math.ceil((start + windowMs) / 1000),
    };
  }
}

export function embeddedCoordination(): Coordination {
  return {
    leases: new MemoryLeaseStore(),
    pubsub: new MemoryPubSub(),
    rateLimiter: new MemoryRateLimiter(),
    healthy: async () => true,
    close: async () => {},
  };
}
