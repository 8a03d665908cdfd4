import {
  COMMANDS,
  type CommandEnvelope,
  type CommandName,
  type CommandPayload,
} from '@agentfleet/schemas';
import type { BusStats, CommandBus, CommandHandlers, ConsumerHandle } from './port.js';
import { newId, PREFIX } from '../ids.js';
import { backoffDelay, sleep } from '../util.js';

interface Partition {
  queue: CommandEnvelope[];
  running: boolean;
}

interface Group {
  handlers: CommandHandlers;
  partitions: Map<string, Partition>; // topic:partition → queue
  inFlight: Set<Promise<void>>;
  stopped: boolean;
}

/**
 * In-process bus: each topic has `partitions` partitions chosen by a hash of the key; every
 * consumer group processes each partition serially, so order per key holds. Delivery is
 * at-least-once within the process lifetime. It is not durable across a crash: the embedded
 * platform relies on the store-driven recovery sweep (sessions whose input is unprocessed are
 * re-driven at start), so no acknowledged user message is lost.
 */
export class EmbeddedBus implements CommandBus {
  private readonly groups = new Map<string, Group>();
  private readonly counters: BusStats = { published: 0, handled: 0, retried: 0, deadLettered: 0 };
  readonly deadLetters: Array<{ topic: string; envelope: CommandEnvelope; error: string }> = [];
  private closed = false;

  constructor(private readonly partitions = 8) {}

  async publish<N extends CommandName>(
    name: N,
    payload: CommandPayload<N>,
    options: { id?: string } = {},
  ): Promise<string> {
    if (this.closed) throw new Error('bus is closed');
    const def = COMMANDS[name];
    const envelope: CommandEnvelope<N> = {
      v: 1,
      id: options.id ?? newId(PREFIX.command),
      name,
      payload,
      published_at: new Date().toISOString(),
      attempt: 1,
    };
    const key = (def.key as (p: CommandPayload<N>) => string)(payload);
    const part = `${def.topic}:${hash(key) % this.partitions}`;
    this.counters.published++;
    for (const group of this.groups.values()) {
      if (group.stopped || !group.handlers[name]) continue;
      let p = group.partitions.get(part);
      if (!p) group.partitions.set(part, (p = { queue: [], running: false }));
      p.queue.push(structuredClone(envelope) as CommandEnvelope);
      this.drain(group, p);
    }
    return envelope.id;
  }

  async consume(group: string, handlers: CommandHandlers): Promise<ConsumerHandle> {
    if (this.groups.has(group))
      throw new Error(`consumer group ${group} already consuming in this process`);
    const g: Group = { handlers, partitions: new Map(), inFlight: new Set(), stopped: false };
    this.groups.set(group, g);
    return {
      stop: async () => {
        g.stopped = true;
        while (g.inFlight.size) await Promise.allSettled([...g.inFlight]);
        this.groups.delete(group);
      },
    };
  }

  private drain(group: Group, p: Partition): void {
    if (p.running || group.stopped) return;
    p.running = true;
    const run = (async () => {
      while (p.queue.length && !group.stopped) {
        const env = p.queue[0]!;
        await this.deliver(group, env);
        p.queue.shift();
      }
      p.running = false;
    })();
    group.inFlight.add(run);
    void run.finally(() => group.inFlight.delete(run));
  }

  private async deliver(group: Group, env: CommandEnvelope): Promise<void> {
    const def = COMMANDS[env.name];
    const handler = group.handlers[env.name] as ((e: CommandEnvelope) => Promise<void>) | undefined;
    if (!handler) return;
    for (let attempt = 1; ; attempt++) {
      env.attempt = attempt;
      try {
        await handler(env);
        this.counters.handled++;
        return;
      } catch (err) {
        if (attempt >= def.retry.maxAttempts || group.stopped) {
          this.counters.deadLettered++;
          this.deadLetters.push({
            topic: `${def.topic}.dlq`,
            envelope: env,
            error: String((err as Error)?.stack ?? err),
          });
          return;
        }
        this.counters.retried++;
        await sleep(backoffDelay(attempt, def.retry.baseDelayMs, def.retry.maxDelayMs));
      }
    }
  }

  stats(): BusStats {
    return { ...this.counters };
  }
  async healthy(): Promise<boolean> {
    return !this.closed;
  }
  async close(): Promise<void> {
    this.closed = true;
    for (const g of this.groups.values()) g.stopped = true;
    await Promise.allSettled([...this.groups.values()].flatMap((g) => [...g.inFlight]));
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
