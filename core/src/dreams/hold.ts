/**
 * The write hold of an `update_existing` dream on its memory store: the store document's
 * `dream_hold` names the one dream that may write the store.
 *
 * Guarantees (test/e2e/memory/dreams-update.test.ts):
 * - taking it is a compare-and-swap (null → dream id, or stopped holder → dream id), so of two
 *   concurrent creates on one store exactly one holds it and the other gets the 409;
 * - a holder counts as stopped (its hold can be taken over) when its record is gone, or when it
 *   is `completed`, `failed` or `canceled` and no worker still holds its claim (claim null or
 *   expired): a dream that was canceled while its worker finishes its last writes still holds
 *   the store, as the SDK describes;
 * - releasing is a compare-and-swap on the holder's id, so a late release never frees another
 *   dream's hold.
 */
import { ApiError, invalid } from '../errors.js';
import type { Collections } from '../store/collections.js';
import { FINAL_STATUSES, LIVE_STATUSES } from './records.js';

/** Rounds of take-over attempts before answering 409 (each round is one CAS). */
const ROUNDS = 5;

export type HoldResult = { held: true } | { held: false; holder: string; live: boolean };

/** Takes the store's hold for `dreamId`; `{held: false}` names the dream that has it. */
export async function takeHold(
  c: Collections,
  tenant: string,
  storeId: string,
  dreamId: string,
  nowMs = Date.now(),
): Promise<HoldResult> {
  let holder = '';
  let live = false;
  for (let round = 0; round < ROUNDS; round++) {
    const got = await c.memoryStores.updateOne(
      tenant,
      { _id: storeId, dream_hold: null },
      { $set: { dream_hold: dreamId } },
    );
    if (got.modified === 1) return { held: true };
    const store = await c.memoryStores.get(tenant, storeId);
    if (!store) throw invalid('output_behavior.memory_store_id', `no memory store ${storeId}`);
    holder = store.dream_hold ?? '';
    if (!holder) continue; // released meanwhile: try the CAS from null again
    if (holder === dreamId) return { held: true };
    const h = await c.dreams.get(tenant, holder);
    const stopped =
      !h || (FINAL_STATUSES.includes(h.status) && (h.claim === null || h.claimed_until <= nowMs));
    live = !!h && LIVE_STATUSES.includes(h.status);
    if (!stopped) return { held: false, holder, live };
    const took = await c.memoryStores.updateOne(
      tenant,
      { _id: storeId, dream_hold: holder },
      { $set: { dream_hold: dreamId } },
    );
    if (took.modified === 1) return { held: true };
  }
  return { held: false, holder, live };
}

/** Frees the store if `dreamId` still holds it. */
export async function releaseHold(
  c: Collections,
  tenant: string,
  storeId: string,
  dreamId: string,
): Promise<void> {
  await c.memoryStores.updateOne(
    tenant,
    { _id: storeId, dream_hold: dreamId },
    { $set: { dream_hold: null } },
  );
}

/** The SDK's 409 (BetaTargetStoreHeldErrorObject): names the other dream and what to do. */
export function storeHeld(storeId: string, r: { holder: string; live: boolean }): ApiError {
  const who = r.holder ? `dream ${r.holder}` : 'another dream';
  const what = r.live
    ? 'wait for it to end or cancel it, then retry'
    : 'it is finishing its last writes; retry after a short wait';
  return new ApiError(
    'conflict',
    `output_behavior.memory_store_id: memory store ${storeId} is being updated by ${who}; ${what}`,
    {
      field: 'output_behavior.memory_store_id',
      error_type: 'conflict_error',
      ...(r.holder ? { dream_id: r.holder } : {}),
    },
  );
}
