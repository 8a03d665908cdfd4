/**
 * Memory search figures (no assertions): top-10 search latency over 10k and 100k memories in
 * the usearch HNSW index memory search uses (core/src/memory/search/vectorIndex.ts), beside an
 * exact brute-force cosine scan over the same vectors in the same run (the baseline), with the
 * HNSW answer's recall@10 against the exact one. The goal: p50 ≤ 20 ms at 100k.
 *
 * The corpus is synthetic and deterministic: memories of 40 words, each on one of 500 topics
 * (three words in four from the topic's 40, the rest from the whole 5,000-word vocabulary), embedded locally (a bag of words through a fixed random projection
 * into DIMENSIONS, L2-normalised: dense like a model's vectors), bypassing HTTP for the fill;
 * queries are 6 words on a topic, drawn the same way. The
 * index is built from the vectors in one batch, as a process does when it first opens a store.
 * The query's own embedding is reported apart: one HTTP round trip to a local
 * OpenAI-compatible endpoint (test/kit/fixtures/embeddingServer.ts) — a hosted model adds its own
 * network and inference time on top (typically tens to hundreds of ms).
 * Run: npx tsx core/bench/memorySearch.bench.ts [queries=500]
 */
import { pathToFileURL } from 'node:url';
import { bruteForceCosine, VectorIndex } from '../src/memory/search/vectorIndex.js';
import { latencyRow, type LatencyRow } from './latencyRow.js';

/** Dimensions of the bench embedding (real models: 384–3072; the index cost grows with it). */
export const DIMENSIONS = 128;
const VOCABULARY = 5_000;
const WORDS_PER_MEMORY = 40;

/** A small deterministic PRNG (mulberry32), so every run searches the same corpus. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Topics of the corpus: each a fixed set of TOPIC_WORDS vocabulary words. */
const TOPICS = 500;
const TOPIC_WORDS = 40;

/** Word ids of a text on a topic: three in four from the topic's words, the rest from anywhere. */
const drawWords = (rand: () => number, n: number, topic = Math.floor(rand() * TOPICS)) =>
  Array.from({ length: n }, () =>
    rand() < 0.75
      ? (topic * 7919 + Math.floor(rand() * TOPIC_WORDS) * 104_729) % VOCABULARY
      : Math.floor(rand() * VOCABULARY),
  );

/**
 * The local embedding: a bag of words through a fixed random projection (each vocabulary word
 * a deterministic random vector; a text is the L2-normalised sum of its words' vectors). Dense
 * like a model's embeddings, and texts sharing words are close by cosine.
 */
function embedder(): (words: number[]) => Float32Array {
  const rand = prng(7);
  const table = new Float32Array(VOCABULARY * DIMENSIONS);
  for (let i = 0; i < table.length; i++) table[i] = rand() + rand() + rand() - 1.5;
  return (words) => {
    const v = new Float32Array(DIMENSIONS);
    for (const w of words) for (let j = 0; j < DIMENSIONS; j++) v[j]! += table[w * DIMENSIONS + j]!;
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n) || 1;
    for (let j = 0; j < DIMENSIONS; j++) v[j]! /= n;
    return v;
  };
}
const embed = embedder();

export interface MemorySearchBenchResult {
  memories: number;
  build_s: number;
  recall_at_10: number;
  rows: LatencyRow[];
}

async function atSize(
  memories: number,
  queries: number,
  baselineQueries: number,
): Promise<MemorySearchBenchResult> {
  const rand = prng(memories);
  const ids: string[] = [];
  const vectors: Float32Array[] = [];
  for (let i = 0; i < memories; i++) {
    ids.push(`mem_${i}`);
    vectors.push(embed(drawWords(rand, WORDS_PER_MEMORY)));
  }
  const index = new VectorIndex(DIMENSIONS);
  const t0 = performance.now();
  for (let i = 0; i < memories; i += 10_000)
    index.addBatch(ids.slice(i, i + 10_000), vectors.slice(i, i + 10_000));
  const build = (performance.now() - t0) / 1000;
  const qs = Array.from({ length: queries }, () => embed(drawWords(rand, 6)));
  const hnsw: number[] = [];
  const answers: string[][] = [];
  for (const q of qs) {
    const s = performance.now();
    answers.push(index.search(q, 10).map((h) => h.id));
    hnsw.push(performance.now() - s);
  }
  const brute: number[] = [];
  let found = 0;
  for (let i = 0; i < baselineQueries; i++) {
    const s = performance.now();
    const exact = bruteForceCosine(qs[i]!, ids, vectors, 10);
    brute.push(performance.now() - s);
    // Ties are common with bag-of-words: a hit counts when its score reaches the exact 10th.
    const floor = exact[exact.length - 1]!.score - 1e-6;
    const scores = new Map(exact.map((h) => [h.id, h.score]));
    const hnswHits = index.search(qs[i]!, 10);
    found += hnswHits.filter((h) => scores.has(h.id) || h.score >= floor).length;
  }
  return {
    memories,
    build_s: Math.round(build * 10) / 10,
    recall_at_10: Math.round((found / (baselineQueries * 10)) * 1000) / 1000,
    rows: [
      latencyRow(`${memories} memories: usearch HNSW top-10`, hnsw),
      latencyRow(`${memories} memories: brute-force cosine top-10 (baseline)`, brute),
    ],
  };
}

/** The query embedding: one POST /embeddings round trip to a local OpenAI-compatible fixture. */
async function queryEmbedding(n: number): Promise<LatencyRow> {
  const fixture = new URL('../../test/kit/fixtures/embeddingServer.ts', import.meta.url).href;
  const { startEmbeddingServer } = (await import(fixture)) as {
    startEmbeddingServer: () => Promise<{ url: string; close(): Promise<void> }>;
  };
  const server = await startEmbeddingServer();
  const samples: number[] = [];
  try {
    for (let i = 0; i < n + 10; i++) {
      const s = performance.now();
      const res = await fetch(`${server.url}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
        body: JSON.stringify({ model: 'bow-64', input: [`where is the runbook ${i}`] }),
      });
      await res.json();
      if (i >= 10) samples.push(performance.now() - s);
    }
  } finally {
    await server.close();
  }
  return latencyRow('query embedding: POST /embeddings to a local endpoint', samples);
}

export async function memorySearchBench(
  o: { queries?: number; sizes?: number[] } = {},
): Promise<MemorySearchBenchResult[]> {
  const queries = o.queries ?? 500;
  const out: MemorySearchBenchResult[] = [];
  for (const size of o.sizes ?? [10_000, 100_000])
    out.push(await atSize(size, queries, size >= 100_000 ? 30 : 100));
  const embedRow = await queryEmbedding(200);
  console.table([...out.flatMap((r) => r.rows), embedRow]);
  console.table(
    out.map((r) => ({
      memories: r.memories,
      'index build s': r.build_s,
      'recall@10 vs exact': r.recall_at_10,
      dimensions: DIMENSIONS,
    })),
  );
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await memorySearchBench({ queries: Number(process.argv[2] ?? 500) });
}
