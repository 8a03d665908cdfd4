/**
 * Long-poll support for the Work API: pollers of an environment wait on its pub/sub channel
 * (Redis in fleet mode, so an enqueue on any gateway wakes pollers on every gateway) and are
 * woken by an enqueue or by their deadline, whichever comes first. A subscription lives only
 * while a poller of that environment waits in this process.
 *
 * Also the integer argument check shared by the Work routes: 400 naming the field.
 */
import { invalid } from '../errors.js';
import type { PubSub } from '../coordination/port.js';

const channelOf = (tenant: string, envId: string) => `work:${tenant}:${envId}`;

export class WorkWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly subs = new Map<string, Promise<(() => Promise<void>) | null>>();
  constructor(private readonly pubsub: PubSub) {}

  async notify(tenant: string, envId: string): Promise<void> {
    await this.pubsub.publish(channelOf(tenant, envId), { type: 'work.enqueued' }).catch(() => {});
  }

  /** Resolves on the next enqueue notice for the environment, or after `ms`. */
  wait(tenant: string, envId: string, ms: number): Promise<void> {
    const ch = channelOf(tenant, envId);
    let set = this.waiting.get(ch);
    if (!set) this.waiting.set(ch, (set = new Set()));
    const waiters = set;
    if (!this.subs.has(ch))
      this.subs.set(
        ch,
        this.pubsub
          .subscribe(ch, () => {
            for (const w of [...(this.waiting.get(ch) ?? [])]) w();
          })
          .catch(() => null),
      );
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.waiting.get(ch) === waiters) {
          this.waiting.delete(ch);
          const sub = this.subs.get(ch);
          this.subs.delete(ch);
          void sub?.then((unsubscribe) => unsubscribe?.()).catch(() => {});
        }
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }
}

/**
 * An optional integer argument (query strings arrive as text): undefined when absent, a 400
 * naming `field` when it is not an integer within [min, max].
 */
export function intArg(v: unknown, field: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n =
    typeof v === 'number' ? v : typeof v === 'string' && /^-?\d{1,16}$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < min || n > max)
    throw invalid(field, `must be an integer from ${min} to ${max}`);
  return n;
}
