/**
 * Leases, pub/sub and rate limits: the coordination port (Redis in fleet mode).
 *
 * Lease guarantees: at most one live holder per key; each acquisition gets a fencing token
 * strictly greater than every earlier one for that key; a lease not renewed within its TTL
 * expires and can be taken by another owner. Writers pass the token so that a stale owner's
 * write is refused (see EventLog.append).
 */
export interface Lease {
  key: string;
  owner: string;
  token: number;
  expiresAt: number;
}

export interface LeaseStore {
  /** Null while any live lease exists for the key, including one held by the same owner. */
  acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /** False when the lease was lost (expired and taken, or released). */
  renew(lease: Lease, ttlMs: number): Promise<boolean>;
  release(lease: Lease): Promise<void>;
  holder(key: string): Promise<{ owner: string; token: number; expiresAt: number } | null>;
}

/** Pub/sub: fire-and-forget fan-out to every current subscriber of a channel, in publish order. */
export interface PubSub {
  publish(channel: string, message: unknown): Promise<void>;
  subscribe(channel: string, handler: (message: unknown) => void): Promise<() => Promise<void>>;
}

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the window resets. */
  resetAt: number;
}

export interface RateLimiter {
  /**
   * Adds `weight` (a positive integer, default 1) to the key's count in the current fixed
   * window; allowed while the count, this weight included, is at most `limit`.
   */
  consume(key: string, limit: number, windowMs: number, weight?: number): Promise<RateLimitResult>;
}

export interface Coordination {
  leases: LeaseStore;
  pubsub: PubSub;
  rateLimiter: RateLimiter;
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}
