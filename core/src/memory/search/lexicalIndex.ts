/**
 * The lexical fallback of memory search: minisearch (BM25-style scoring, prefix and fuzzy term
 * matching) over each memory's path and content, used when no embedding model applies to the
 * store (the search answer says `mode: 'lexical'`). Kept in process beside the vector index
 * and refreshed the same way (./search.ts). Proved by test/e2e/memory/memory-search.test.ts ("lexical").
 */
import MiniSearch from 'minisearch';

export interface LexicalHit {
  id: string;
  score: number;
}

interface LexicalDoc {
  id: string;
  path: string;
  content: string;
}

export class LexicalIndex {
  private readonly index = new MiniSearch<LexicalDoc>({
    fields: ['path', 'content'],
    // Path segments are words too: "/notes/deploy-runbook.md" → notes, deploy, runbook, md.
    tokenize: (text) => text.split(/[\s\p{P}\p{S}]+/u).filter(Boolean),
    searchOptions: { boost: { path: 2 }, prefix: true, fuzzy: 0.2 },
  });

  get size(): number {
    return this.index.documentCount;
  }

  upsert(id: string, path: string, content: string): void {
    if (this.index.has(id)) this.index.discard(id);
    this.index.add({ id, path, content });
  }

  remove(id: string): void {
    if (this.index.has(id)) this.index.discard(id);
  }

  search(query: string, limit: number): LexicalHit[] {
    return this.index
      .search(query)
      .slice(0, limit)
      .map((r) => ({ id: String(r.id), score: r.score }));
  }
}
