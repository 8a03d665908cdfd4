/**
 * Constructors of the network adapters that load their client library only when called, so a
 * process on embedded adapters never loads kafkajs or ioredis. Which one runs is chosen by the
 * composition root (server/src/components.ts). Contract suites: test/bus.test.ts,
 * test/coordination*.test.ts.
 */
import type { KafkaBus, KafkaBusOptions } from './bus/kafka/options.js';
import type { Coordination } from './coordination/port.js';

export async function openKafkaBus(opts: KafkaBusOptions): Promise<KafkaBus> {
  const { createKafkaBus } = await import('./bus/kafka/bus.js');
  return createKafkaBus(opts);
}

export async function openRedisCoordination(
  url: string,
  opts: { keyPrefix: string },
): Promise<Coordination> {
  const { createRedisCoordination } = await import('./coordination/redis.js');
  return createRedisCoordination(url, opts);
}
