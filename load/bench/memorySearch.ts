/**
 * Section j: memory search. Top-10 latency p50/p99 of the usearch HNSW index memory search
 * uses, at 10k and 100k memories, beside an exact brute-force cosine scan from the same run,
 * with recall@10 and the index build time; the query embedding (one POST /embeddings round trip
 * to a local OpenAI-compatible endpoint) apart (core/bench/memorySearch.bench.ts, loaded at run
 * time). The goal: p50 ≤ 20 ms at 100k.
 */
import { printSection } from './stats.js';

export async function memorySearchSection(): Promise<unknown> {
  printSection(
    'j. Memory search: HNSW (usearch) top-10 at 10k and 100k memories beside a brute-force scan',
  );
  const url = new URL('../../core/bench/memorySearch.bench.ts', import.meta.url);
  const mod = (await import(url.href)) as {
    memorySearchBench: (o?: { queries?: number }) => Promise<unknown>;
  };
  return mod.memorySearchBench({ queries: 500 });
}
