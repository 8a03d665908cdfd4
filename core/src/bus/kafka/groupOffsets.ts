/**
 * Where a new consumer group starts (KafkaBusOptions.initialOffset). 'earliest' needs nothing
 * here (the consumer subscribes from the beginning). With 'latest', when the group is new (no
 * running member) and has partitions without a committed offset, a short-lived member of the
 * group joins with everything paused, commits the current end of those partitions and leaves, so
 * every command published after consume() resolved reaches the group even if its first consumer
 * dies before handling anything. (kafkajs's admin.setOffsets does the same but waits out a 5 s
 * fetch.) A retriable error (a coordinator still loading after a broker restart) is asked again
 * for up to 30 s; a failure here is logged, never thrown: the group then starts where kafkajs
 * puts it.
 * Every Kafka test in core/test/bus.test.ts runs with initialOffset 'latest' (the contract
 * suite's groups each publish right after consume() and must receive it).
 */
import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from '../../log.js';
import { groupTimeouts, untilAnswered, withTimeout, type KafkaBusOptions } from './options.js';

/** How long a retriable answer (a coordinator still loading after a restart) is asked again. */
const ANSWER_WITHIN_MS = 30_000;

export async function initGroupOffsets(
  kafka: Kafka,
  admin: Admin,
  opts: KafkaBusOptions,
  log: Logger,
  group: string,
  topics: string[],
): Promise<void> {
  if ((opts.initialOffset ?? 'earliest') !== 'latest') return;
  const missing = async () => {
    const out: Array<{ topic: string; partition: number }> = [];
    for (const { topic, partitions } of await admin.fetchOffsets({
      groupId: group,
      topics,
    })) {
      for (const p of partitions)
        if (Number(p.offset) < 0) out.push({ topic, partition: p.partition });
    }
    return out;
  };
  try {
    // A broker that just (re)started answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for
    // a while (retriable): asked again until it answers (CI: the group read right after a restart).
    if (!(await untilAnswered(missing, ANSWER_WITHIN_MS)).length) return;
    const { groups } = await untilAnswered(() => admin.describeGroups([group]), ANSWER_WITHIN_MS);
    if (groups[0] && !['Empty', 'Dead'].includes(groups[0].state)) return; // a running member already started it
  } catch (err) {
    log.warn('could not read the offsets of a new group', {
      group,
      error: (err as Error).message,
    });
    return;
  }

  const c = opts.consumer ?? {};
  const init = kafka.consumer({
    groupId: group,
    ...groupTimeouts(c),
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
  });
  try {
    await init.connect();
    await init.subscribe({ topics });
    const joined = new Promise<void>((resolve) => init.on(init.events.GROUP_JOIN, () => resolve()));
    const running = init.run({ autoCommit: false, eachBatch: async () => {} });
    init.pause(topics.map((topic) => ({ topic }))); // before the first fetch: nothing is read
    await running;
    await withTimeout(joined, c.joinTimeoutMs ?? 30_000);
    const todo = await missing();
    const ends = new Map<string, string>();
    for (const topic of new Set(todo.map((t) => t.topic))) {
      for (const p of await admin.fetchTopicOffsets(topic))
        ends.set(`${topic}:${p.partition}`, p.high);
    }
    if (todo.length)
      await init.commitOffsets(
        todo.map((t) => ({ ...t, offset: ends.get(`${t.topic}:${t.partition}`) ?? '0' })),
      );
  } catch (err) {
    log.warn('could not set the initial offsets of a new group', {
      group,
      error: (err as Error).message,
    });
  } finally {
    await init.disconnect().catch(() => {});
  }
}
