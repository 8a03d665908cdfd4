/** Memory search: see ./search.ts for its guarantees and vectorIndex.ts for the index. */
export {
  MemorySearchService,
  MAX_EMBED_PER_SEARCH,
  embeddingText,
  snippet,
  type MemorySource,
  type SourceMemory,
  type MemorySearchAnswer,
  type MemorySearchHit,
  type MemorySearchOptions,
} from './search.js';
export {
  resolveEmbeddingModel,
  isEmbeddingCard,
  EmbeddingError,
  type EmbeddingModel,
  type EmbeddingDeps,
} from './embeddings.js';
export { VectorIndex, bruteForceCosine, encodeVector, decodeVector } from './vectorIndex.js';
export { LexicalIndex } from './lexicalIndex.js';
