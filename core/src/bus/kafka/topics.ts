/**
 * Kafka topic names and topic creation for the bus adapter (bus.ts).
 *
 * Names: with a namespace, catalog topic `agentfleet.<name>` is `<namespace>.<name>` and
 * consumer group `g` is `<namespace>.<g>`, so several platforms share one cluster without seeing
 * each other's commands; every topic has a dead-letter topic `<topic>.dlq`.
 *
 * Creation: missing topics are created with the configured partitions and replication factor,
 * racing creators tolerated (looked up again, up to three rounds); a topic that already exists
 * is left as it is even with another partition count (adding partitions would move keys between
 * partitions and break order per key), and that is logged. That check reads the topics'
 * metadata, which a broker may not serve yet right after creating them (UNKNOWN_TOPIC_OR_PARTITION,
 * retriable: seen in CI with other platforms creating topics on the same broker); it is asked
 * again for up to 15 s, and a check that still cannot be made is logged, never fails the start
 * (producers and consumers wait for metadata themselves). Proved by core/test/bus.test.ts
 * (Kafka: namespaces, dead letters) and core/test/bus.contract.ts.
 */
import type { Admin } from 'kafkajs';
import type { Logger } from '../../log.js';
import { untilAnswered } from './options.js';

/** How long the partition-count check asks again while the broker's metadata lags. */
const METADATA_WITHIN_MS = 15_000;

export const dlqTopic = (topic: string) => `${topic}.dlq`;

/** The Kafka topic of a catalog topic under a namespace (`agentfleet.x` → `<namespace>.x`). */
export function namespacedTopic(catalogTopic: string, namespace?: string): string {
  if (!namespace) return catalogTopic;
  const rest = catalogTopic.startsWith('agentfleet.')
    ? catalogTopic.slice('agentfleet.'.length)
    : catalogTopic;
  return `${namespace}.${rest}`;
}

/** The Kafka consumer group id of a group under a namespace. */
export const namespacedGroup = (group: string, namespace?: string) =>
  namespace ? `${namespace}.${group}` : group;

/** Creates the missing ones of `wanted` (see the header); warns about other partition counts. */
export async function ensureTopics(
  admin: Admin,
  wanted: readonly string[],
  o: { partitions: number; replicationFactor: number; log: Logger },
): Promise<void> {
  const { partitions, replicationFactor } = o;
  for (let round = 1; ; round++) {
    const existing = new Set(await admin.listTopics());
    const missing = wanted.filter((t) => !existing.has(t));
    if (!missing.length) break;
    try {
      await admin.createTopics({
        topics: missing.map((topic) => ({ topic, numPartitions: partitions, replicationFactor })),
        waitForLeaders: true,
      });
      break;
    } catch (err) {
      // Another process created some of them at the same moment: look again.
      if (round >= 3) throw err;
    }
  }
  const topics = await topicMetadata(admin, wanted, o.log);
  for (const t of topics) {
    if (t.partitions.length !== partitions) {
      o.log.warn('topic exists with another partition count; left as it is', {
        topic: t.name,
        partitions: t.partitions.length,
        configured: partitions,
      });
    }
  }
}

/** The topics' metadata, asked again while the broker answers a retriable error; [] if it never does. */
async function topicMetadata(admin: Admin, wanted: readonly string[], log: Logger) {
  try {
    const read = () => admin.fetchTopicMetadata({ topics: [...wanted] });
    return (await untilAnswered(read, METADATA_WITHIN_MS)).topics;
  } catch (err) {
    log.warn('topic metadata not readable; partition counts not checked', {
      error: (err as Error).message,
    });
    return [];
  }
}
