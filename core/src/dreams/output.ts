/**
 * A dream's last step: its checked answer written to a new memory store (`create_new`) or into
 * its input store (`update_existing`, ./apply.ts). Proved by test/e2e/memory/dreams.test.ts and
 * test/e2e/memory/dreams-update.test.ts.
 */
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import type { MemoryService } from '../memory/memory.js';
import { applyToStore, checkAnswer, conflictFailure, type ReadMemory } from './apply.js';
import type { DreamDoc } from './records.js';
import { DreamFailure } from './run.js';

export interface OutputDeps {
  c: Collections;
  memory: MemoryService;
  log: Logger;
  /** Settles the dream if it is still this claim's (the service's compare-and-swap). */
  finish: (set: Partial<DreamDoc>) => Promise<boolean>;
}

const nowIso = () => new Date().toISOString();

/**
 * update_existing: checks the whole answer, then records the input store as the output (the
 * commit point: a cancel or timeout before it leaves the store untouched) and applies the
 * answer (./apply.ts). Once applying, the writes run to the end whatever a cancel or the
 * timeout says (the store hold covers them); skipped writes fail the dream `memory_conflict`.
 */
export async function updateExisting(
  deps: OutputDeps,
  d: DreamDoc,
  token: string,
  read: ReadMemory[],
  answer: Array<{ path: string; content: string }>,
  signal: AbortSignal,
): Promise<void> {
  const { c, memory, log, finish } = deps;
  const tenant = d.tenant_id;
  checkAnswer(answer);
  const store = await c.memoryStores.get(tenant, d.store_id);
  if (!store || store.archived_at)
    throw new DreamFailure(
      'invalid_request',
      `memory store ${d.store_id} was ${store ? 'archived' : 'deleted'} while the dream ran`,
    );
  if (signal.aborted) throw signal.reason;
  const committed = await c.dreams.updateOne(
    tenant,
    { _id: d._id, claim: token, status: 'running' },
    {
      $set: {
        outputs: [{ type: 'memory_store', memory_store_id: d.store_id }],
        updated_at: nowIso(),
      },
    },
  );
  if (committed.modified !== 1) throw new DreamFailure('canceled', 'canceled');
  const current = (id: string) => c.memories.findOne(tenant, { _id: id, store_id: d.store_id });
  let result;
  try {
    result = await applyToStore(memory, current, tenant, d.store_id, read, answer, d.actor ?? null);
  } catch (err) {
    if (!(err instanceof ApiError))
      log.warn('dream apply failed', { dream_id: d._id, err: String(err) });
    const why = err instanceof ApiError ? err.message : 'an unexpected error';
    await finish({
      status: 'failed',
      error: {
        type: err instanceof ApiError ? 'invalid_request' : 'internal_error',
        message: `the dream stopped while writing memory store ${d.store_id}: ${why}`,
      },
    });
    return;
  }
  for (const x of result.conflicts)
    log.info('dream left a changed memory as it is', {
      dream_id: d._id,
      memory_id: x.memory_id,
      wanted: x.wanted,
    });
  if (result.conflicts.length === 0) await finish({ status: 'completed' });
  else {
    const f = conflictFailure(d.store_id, result);
    await finish({
      status: 'failed',
      error: { type: f.type, message: f.message },
    });
  }
}

/** Creates the output store and writes every memory; the caller deletes it on failure. */
export async function writeNewStore(
  deps: OutputDeps,
  d: DreamDoc,
  answer: Array<{ path: string; content: string }>,
  signal: AbortSignal,
): Promise<string> {
  const { memory, c } = deps;
  const tenant = d.tenant_id;
  const input = await c.memoryStores.get(tenant, d.store_id);
  const name = `${input?.name ?? d.store_id} (dream ${d._id})`.slice(0, 255);
  const out = await memory.createStore(tenant, {
    name,
    description: `Reorganised by dream ${d._id} from memory store ${d.store_id}`.slice(0, 1024),
    metadata: { dream_id: d._id, source_memory_store_id: d.store_id },
  });
  try {
    for (const [i, m] of answer.entries()) {
      if (signal.aborted) throw signal.reason;
      try {
        await memory.createMemory(tenant, out.id, m);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const where = `memories[${i}] (${JSON.stringify(m.path.slice(0, 120))})`;
        throw new DreamFailure(
          'invalid_model_output',
          `the model's answer ${where} was refused by the store: ${err.message}`,
        );
      }
    }
  } catch (err) {
    await memory.deleteStore(tenant, out.id).catch(() => {});
    throw err;
  }
  return out.id;
}
