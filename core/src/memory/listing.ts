/**
 * List Memories (SDK `memories.list`): memories below `path_prefix` (default the whole store),
 * in path order, paged with opaque cursors on the path. `depth: 0` (default) lists every memory
 * below the prefix; `depth: n ≥ 1` lists memories at most n segments below it and rolls deeper
 * ones into `memory_prefix` items (`/projects/foo/`, counted toward the page limit). Default
 * `view` is `basic` (content null); `view=full` caps the page at 20 items. Proved by
 * test/e2e/memory/memory-stores.test.ts ("list memories").
 */
import type { MemoryListQuery } from '@agentfleet/schemas';
import type { Collections } from '../store/collections.js';
import { decodeCursor, makePage, type Page } from '../api/pagination.js';
import type { Filter } from '../store/port.js';
import type { MemoryDoc } from './records.js';
import { checkPathPrefix, underPrefix } from './paths.js';
import { renderMemory, type Memory } from './render.js';

export type MemoryListItem = Memory | { type: 'memory_prefix'; path: string };

const FULL_VIEW_MAX = 20;
const DEFAULT_LIMIT = 20;

export async function listMemoryPage(
  c: Collections,
  tenant: string,
  storeId: string,
  q: MemoryListQuery,
): Promise<Page<MemoryListItem>> {
  const prefix = q.path_prefix === undefined ? '/' : checkPathPrefix(q.path_prefix);
  const view = q.view ?? 'basic';
  const limit = Math.min(q.limit ?? DEFAULT_LIMIT, view === 'full' ? FULL_VIEW_MAX : Infinity);
  const cur = q.page ? decodeCursor(q.page) : null;
  const backwards = cur?.d === 'prev';
  const range: Record<string, string> = underPrefix(prefix);
  const depth = q.depth ?? 0;
  const key = (i: MemoryListItem) => i.path;
  const opts = { hadCursor: !!cur, backwards };
  if (depth === 0) {
    const path: Record<string, string> = { ...range };
    if (cur) path[backwards ? '$lt' : '$gt'] = String(cur.k);
    const filter: Filter = { store_id: storeId, path };
    const rows = await c.memories.find(tenant, filter, {
      sort: { path: backwards ? -1 : 1 },
      limit: limit + 1,
    });
    const items = rows.map((m): MemoryListItem => renderMemory(m, view));
    return makePage(items, limit, key, key, opts);
  }
  // depth ≥ 1: roll up below the depth, then page the merged, path-ordered items.
  const rows = await c.memories.find(
    tenant,
    { store_id: storeId, path: range },
    { sort: { path: 1 } },
  );
  const items = rollUp(rows, prefix, depth, view);
  const after = cur ? items.filter((i) => (backwards ? i.path < cur.k : i.path > cur.k)) : items;
  const ordered = backwards ? after.reverse() : after;
  return makePage(ordered.slice(0, limit + 1), limit, key, key, opts);
}

function rollUp(rows: MemoryDoc[], prefix: string, depth: number, view: 'basic' | 'full') {
  const out: MemoryListItem[] = [];
  const seen = new Set<string>();
  for (const m of rows) {
    const segs = m.path.slice(prefix.length).split('/');
    if (segs.length <= depth) {
      out.push(renderMemory(m, view));
      continue;
    }
    const p = prefix + segs.slice(0, depth).join('/') + '/';
    if (seen.has(p)) continue;
    seen.add(p);
    out.push({ type: 'memory_prefix', path: p });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
