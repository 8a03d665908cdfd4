/**
 * A dream's inputs checked in the tenant: exactly one live `memory_store` and one `sessions`
 * entry of 1 to 100 distinct, existing session ids; every problem a 400 naming the field
 * (`inputs[i]…`). Proved by test/e2e/memory/dreams.test.ts ("bad input is a 400 naming the field").
 */
import type { DreamCreate } from '@agentfleet/schemas';
import { invalid } from '../errors.js';
import type { Collections } from '../store/collections.js';

/** Checks the body against the tenant's stores and sessions; returns the inputs (ids sorted). */
export async function checkInputs(c: Collections, tenant: string, b: DreamCreate) {
  let store: string | null = null;
  let sessions: string[] | null = null;
  for (const [i, input] of b.inputs.entries()) {
    if (input.type === 'memory_store') {
      if (store) throw invalid(`inputs[${i}]`, 'a dream reads exactly one memory_store input');
      if (!input.memory_store_id || input.session_ids)
        throw invalid(`inputs[${i}].memory_store_id`, 'is required (and only it)');
      const s = await c.memoryStores.get(tenant, input.memory_store_id);
      if (!s) throw invalid(`inputs[${i}].memory_store_id`, 'no such memory store');
      if (s.archived_at) throw invalid(`inputs[${i}].memory_store_id`, 'the store is archived');
      store = s._id;
    } else {
      if (sessions) throw invalid(`inputs[${i}]`, 'a dream reads exactly one sessions input');
      const ids = input.session_ids;
      if (!ids || input.memory_store_id)
        throw invalid(`inputs[${i}].session_ids`, 'is required (and only it)');
      if (ids.length < 1 || ids.length > 100)
        throw invalid(`inputs[${i}].session_ids`, 'must list 1 to 100 session ids');
      for (const [j, sid] of ids.entries()) {
        if (ids.indexOf(sid) !== j)
          throw invalid(`inputs[${i}].session_ids[${j}]`, `repeats ${sid}`);
        if (!(await c.sessions.get(tenant, sid)))
          throw invalid(`inputs[${i}].session_ids[${j}]`, `no such session ${sid}`);
      }
      sessions = [...ids].sort();
    }
  }
  if (!store) throw invalid('inputs', 'needs one {type: "memory_store"} entry');
  if (!sessions) throw invalid('inputs', 'needs one {type: "sessions"} entry');
  return { store, sessions };
}
