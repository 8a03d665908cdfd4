/**
 * The in-process search structures of one store, each following the persisted entries
 * (entries.ts): built from all of them on first use, then brought up to date before every
 * search by reading the entries written since their watermark. The watermark trails the
 * store's change counter by OVERLAP change numbers, so an entry whose change number was taken
 * just before another process read the counter, but written just after, is still read on the
 * next search (re-reading is idempotent: an entry already applied at its change number is
 * skipped).
 *
 * - VectorFollower: the usearch index of one embedding model (vectorIndex.ts). Entries with a
 *   vector of that model are added; entries without one (no model at write time, endpoint
 *   failure, another model, or content changed) are `pending` until a search embeds them.
 * - LexicalFollower: the minisearch index (lexicalIndex.ts); content is read from the memories.
 */
import type { SearchEntries, SearchEntryDoc } from './entries.js';
import { decodeVector, VectorIndex } from './vectorIndex.js';
import { LexicalIndex } from './lexicalIndex.js';
import type { MemorySource } from './search.js';

/** Change numbers re-read behind the counter on every refresh (writes in flight elsewhere). */
const OVERLAP = 16;
/** Memories whose content is read per request when the lexical index is filled. */
const CONTENT_PAGE = 500;

abstract class EntryFollower {
  private watermark = -1;
  private readonly applied = new Map<string, number>();

  /** Applies the entries written after the watermark (all of them on first use). */
  async sync(entries: SearchEntries, tenant: string, storeId: string): Promise<void> {
    const counter = await entries.counter(tenant, storeId);
    for await (const e of entries.since(tenant, storeId, Math.max(0, this.watermark))) {
      if ((this.applied.get(e._id) ?? -1) >= e.seq) continue;
      this.applied.set(e._id, e.seq);
      this.apply(e);
    }
    this.watermark = Math.max(this.watermark, counter - OVERLAP);
    await this.settle(tenant, storeId);
  }

  /** Live memories this structure knows of. */
  abstract get liveCount(): number;
  protected abstract apply(e: SearchEntryDoc): void;
  protected abstract settle(tenant: string, storeId: string): Promise<void>;
}

export class VectorFollower extends EntryFollower {
  index: VectorIndex | null = null;
  /** Live memories: path and content hash of their entry. */
  readonly live = new Map<string, { path: string; sha: string }>();
  /** Live memories without a vector of this model for their current content. */
  readonly pending = new Set<string>();

  constructor(readonly modelKey: string) {
    super();
  }

  get liveCount(): number {
    return this.live.size;
  }

  protected apply(e: SearchEntryDoc): void {
    if (e.deleted) {
      this.live.delete(e._id);
      this.pending.delete(e._id);
      this.index?.remove(e._id);
      return;
    }
    this.live.set(e._id, { path: e.path, sha: e.content_sha256 });
    if (e.model_key === this.modelKey && e.vector) {
      this.addVector(e._id, decodeVector(e.vector));
    } else {
      this.index?.remove(e._id);
      this.pending.add(e._id);
    }
  }

  /** Adds a vector of this model (creates the index at the first one's dimensions). */
  addVector(id: string, v: Float32Array): void {
    this.index ??= new VectorIndex(v.length);
    if (v.length !== this.index.dimensions) {
      // The endpoint changed its dimensions under the same model: embed again.
      this.index.remove(id);
      this.pending.add(id);
      return;
    }
    this.index.upsert(id, v);
    this.pending.delete(id);
  }

  protected async settle(): Promise<void> {}
}

export class LexicalFollower extends EntryFollower {
  readonly index = new LexicalIndex();
  private readonly needContent = new Set<string>();

  constructor(private readonly source: MemorySource) {
    super();
  }

  get liveCount(): number {
    return this.index.size + this.needContent.size;
  }

  protected apply(e: SearchEntryDoc): void {
    if (e.deleted) {
      this.needContent.delete(e._id);
      this.index.remove(e._id);
    } else this.needContent.add(e._id);
  }

  protected async settle(tenant: string, storeId: string): Promise<void> {
    const ids = [...this.needContent];
    for (let i = 0; i < ids.length; i += CONTENT_PAGE) {
      const page = ids.slice(i, i + CONTENT_PAGE);
      const found = new Map(
        (await this.source.memories(tenant, storeId, page)).map((m) => [m._id, m]),
      );
      for (const id of page) {
        const m = found.get(id);
        if (m) this.index.upsert(id, m.path, m.content);
        else this.index.remove(id);
        this.needContent.delete(id);
      }
    }
  }
}

/** The open structures of one store (an LRU entry of ./search.ts). */
export class OpenStore {
  vector: VectorFollower | null = null;
  lexical: LexicalFollower | null = null;
  /** The entries were checked against the memories since this process opened the store. */
  reconciled = false;
  private chain: Promise<unknown> = Promise.resolve();

  /** Runs `f` after every earlier call on this store finished (one sync at a time). */
  serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => {});
    return run;
  }
}
