/**
 * `output_behavior: update_existing`: the dream's answer applied to its own input store.
 *
 * The answer is the complete reorganised store (the prompt asks for it, and the SDK describes
 * the result as a reorganised version of the store), so:
 * - an answer path the dream read with other content → update with the `content_sha256` the
 *   dream read (compare-and-swap); same content → no write;
 * - an answer path the dream did not read → create;
 * - a memory the dream read whose path is absent from the answer → delete with
 *   `expected_content_sha256` of what it read.
 * Every write goes through the memory service, so each adds one version (`created_by` the actor
 * of the key that created the dream) and reaches the search index.
 *
 * Guarantees (test/e2e/memory/dreams-update.test.ts):
 * - checkAnswer refuses, before anything is written, an answer with overlapping paths (one a
 *   prefix directory of another) or content the store would refuse (over 100 kB, lone
 *   surrogates): `invalid_model_output` naming `memories[i]`;
 * - a memory changed, renamed or deleted by someone else since the dream read it is never
 *   overwritten or deleted: the write is skipped and returned as a conflict (the memory's
 *   version id is compared first, then the write itself carries the hash precondition); a
 *   create onto a path someone else took meanwhile is skipped and returned the same way; a
 *   memory someone else deleted that the dream would delete too is no conflict;
 * - order: updates, then deletes, then creates, so a path freed by the reorganisation can be
 *   reused and a failed create never costs content (deletes keep their versions anyway).
 */
import { MAX_MEMORY_BYTES } from '@agentfleet/schemas';
import { ApiError } from '../errors.js';
import type { MemoryActor, MemoryDoc } from '../memory/records.js';
import { ancestorsOf, checkWellFormed } from '../memory/paths.js';
import type { MemoryService } from '../memory/memory.js';
import { DreamFailure } from './run.js';

export type ReadMemory = Pick<MemoryDoc, '_id' | 'path' | 'content_sha256' | 'version_id'> & {
  content: string;
};

export interface ApplyConflict {
  path: string;
  memory_id: string;
  /** What the dream wanted to do, and what it found instead. */
  wanted: 'update' | 'delete' | 'create';
  found: string;
}

export interface ApplyResult {
  /** Writes made (updates, deletes, creates). */
  applied: number;
  /** Writes the dream wanted to make. */
  planned: number;
  conflicts: ApplyConflict[];
}

const GONE = 'deleted since the dream read it';
const clip = (s: string) => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);

/** The whole answer checks out as a store, or an `invalid_model_output` naming the entry. */
export function checkAnswer(answer: Array<{ path: string; content: string }>): void {
  const paths = new Set(answer.map((m) => m.path));
  for (const [i, m] of answer.entries()) {
    const bad = (why: string) =>
      new DreamFailure('invalid_model_output', `the model's answer memories[${i}] ${why}`);
    try {
      checkWellFormed(m.content, `memories[${i}].content`);
    } catch {
      throw bad('content is not valid Unicode (lone surrogates)');
    }
    const bytes = Buffer.byteLength(m.content, 'utf8');
    if (bytes > MAX_MEMORY_BYTES)
      throw bad(`content is ${bytes} bytes; a memory holds at most ${MAX_MEMORY_BYTES} bytes`);
    const under = ancestorsOf(m.path).find((a) => paths.has(a));
    if (under) throw bad(`path ${clip(m.path)} is under ${clip(under)}, another memory's path`);
  }
}

/** The memory-service error of a refused write as a conflict, or null when it is another error. */
function conflictOf(err: unknown): string | null {
  if (!(err instanceof ApiError)) return null;
  if (err.type === 'not_found') return GONE;
  if (err.type !== 'conflict') return null;
  const t = err.details?.error_type;
  if (t === 'memory_precondition_failed_error') return 'changed since the dream read it';
  if (t === 'memory_path_conflict_error')
    return `path taken by memory ${String(err.details?.conflicting_memory_id ?? '')}`;
  return 'changing too fast';
}

export async function applyToStore(
  memory: MemoryService,
  current: (id: string) => Promise<MemoryDoc | null>,
  tenant: string,
  storeId: string,
  read: ReadMemory[],
  answer: Array<{ path: string; content: string }>,
  actor: MemoryActor | null,
): Promise<ApplyResult> {
  const readByPath = new Map(read.map((m) => [m.path, m]));
  const wanted = new Set(answer.map((m) => m.path));
  const updates = answer.flatMap((a) => {
    const r = readByPath.get(a.path);
    return r && r.content !== a.content ? [{ r, content: a.content }] : [];
  });
  const deletes = read.filter((r) => !wanted.has(r.path));
  const creates = answer.filter((a) => !readByPath.has(a.path));
  const out: ApplyResult = {
    applied: 0,
    planned: updates.length + deletes.length + creates.length,
    conflicts: [],
  };

  /** Runs one write; a conflict is recorded, any other error aborts the apply. */
  const attempt = async (
    c: Omit<ApplyConflict, 'found'>,
    write: () => Promise<unknown>,
  ): Promise<void> => {
    try {
      await write();
      out.applied++;
    } catch (err) {
      const found = conflictOf(err);
      if (found === null) throw err;
      if (c.wanted === 'delete' && found === GONE)
        out.planned--; // already what the dream wanted
      else out.conflicts.push({ ...c, found });
    }
  };
  /** Someone else's write since the dream read `r` (content, path or a delete), or null. */
  const changedSince = async (r: ReadMemory): Promise<string | null> => {
    const now = await current(r._id);
    if (!now) return GONE;
    if (now.version_id !== r.version_id)
      return now.path === r.path
        ? 'changed since the dream read it'
        : `moved to ${clip(now.path)} since the dream read it`;
    return null;
  };

  for (const { r, content } of updates) {
    const c = { path: r.path, memory_id: r._id, wanted: 'update' as const };
    const found = await changedSince(r);
    if (found) out.conflicts.push({ ...c, found });
    else
      await attempt(c, () =>
        memory.updateMemory(
          tenant,
          storeId,
          r._id,
          { content, content_sha256: r.content_sha256 },
          actor,
        ),
      );
  }
  for (const r of deletes) {
    const c = { path: r.path, memory_id: r._id, wanted: 'delete' as const };
    const found = await changedSince(r);
    if (found === GONE)
      out.planned--; // already what the dream wanted
    else if (found) out.conflicts.push({ ...c, found });
    else
      await attempt(c, () =>
        memory.deleteMemory(
          tenant,
          storeId,
          r._id,
          { expected_content_sha256: r.content_sha256 },
          actor,
        ),
      );
  }
  for (const a of creates)
    await attempt({ path: a.path, memory_id: '', wanted: 'create' }, () =>
      memory.createMemory(tenant, storeId, a, actor),
    );
  return out;
}

/** The failure a dream with skipped writes ends with: every skipped memory named (bounded). */
export function conflictFailure(storeId: string, r: ApplyResult): DreamFailure {
  const shown = r.conflicts
    .slice(0, 20)
    .map((c) => `${c.wanted} ${clip(c.path)}${c.memory_id ? ` (${c.memory_id})` : ''}: ${c.found}`);
  const more = r.conflicts.length > 20 ? `; and ${r.conflicts.length - 20} more` : '';
  return new DreamFailure(
    'memory_conflict',
    `the dream wrote ${r.applied} of its ${r.planned} changes to memory store ${storeId}; ` +
      `${r.conflicts.length} memories changed by someone else since the dream read them were ` +
      `left as they are: ${shown.join('; ')}${more}`,
  );
}
