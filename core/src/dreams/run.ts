/**
 * One dream's work, after the claim: read every memory of the input store and the given sessions'
 * canonical events, ask the model for the reorganised store as JSON (`{"memories": [{"path",
 * "content"}]}`), check every entry, and only then write the new store. The input store is only
 * read. A model error, an unparsable or invalid answer, a timeout or a cancel throws a
 * DreamFailure (or the abort reason) before anything is written. Proved by test/e2e/memory/dreams.test.ts.
 */
import type { ChatMessage } from '../models/port.js';
import { checkMemoryPath } from '../memory/paths.js';
import type { DreamDoc } from './records.js';

/** A failure recorded on the dream as its `error` ({type, message}). */
export class DreamFailure extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export interface DreamSource {
  memories: Array<{ path: string; content: string }>;
  sessions: Array<{ id: string; events: Array<{ type: string; payload: unknown }> }>;
}

export const DREAM_SYSTEM = [
  'You reorganise a memory store: a set of text documents at hierarchical paths that an agent',
  'reads at the start of its sessions. You get the current memories and transcripts of recent',
  'sessions. Produce the complete new store: merge duplicates, replace stale entries with what',
  'the sessions show is current, keep what is still true, add durable lessons from the sessions.',
  'Answer with JSON only, no prose: {"memories": [{"path": "/dir/name.md", "content": "..."}]}.',
  "Paths start with '/', have no empty, '.' or '..' segments, and no path is a prefix directory",
  'of another.',
].join('\n');

/** Canonical events of a session as compact lines for the prompt (text where there is text). */
function transcript(events: DreamSource['sessions'][number]['events']): string {
  return events
    .filter((e) => !e.type.startsWith('span.'))
    .map((e) => `${e.type}: ${JSON.stringify(e.payload)}`)
    .join('\n');
}

export function dreamRequest(d: DreamDoc, src: DreamSource): ChatMessage[] {
  const parts = [
    '<memories>',
    JSON.stringify(src.memories, null, 1),
    '</memories>',
    ...src.sessions.flatMap((s) => [`<session id="${s.id}">`, transcript(s.events), '</session>']),
  ];
  if (d.instructions) parts.push('<instructions>', d.instructions, '</instructions>');
  return [{ role: 'user', content: [{ type: 'text', text: parts.join('\n') }] }];
}

const clip = (s: string) => (s.length > 120 ? `${s.slice(0, 120)}…` : s);

/** Parses and checks the answer; every problem is a DreamFailure `invalid_model_output`. */
export function parseAnswer(text: string): Array<{ path: string; content: string }> {
  const bad = (why: string) =>
    new DreamFailure('invalid_model_output', `the model's answer ${why}`);
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const raw = (fenced ? fenced[1]! : text).trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw bad(`is not JSON {"memories": [{"path", "content"}]}: ${JSON.stringify(clip(raw))}`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { memories?: unknown })?.memories;
  if (!Array.isArray(list)) throw bad('has no "memories" list');
  const seen = new Set<string>();
  return list.map((m: unknown, i) => {
    const e = m as { path?: unknown; content?: unknown };
    if (typeof e?.path !== 'string' || typeof e.content !== 'string')
      throw bad(`memories[${i}] is not {"path": string, "content": string}`);
    try {
      checkMemoryPath(e.path, `memories[${i}].path`);
    } catch (err) {
      throw bad(`memories[${i}].path ${JSON.stringify(clip(e.path))}: ${(err as Error).message}`);
    }
    if (seen.has(e.path)) throw bad(`repeats the path ${JSON.stringify(clip(e.path))}`);
    seen.add(e.path);
    return { path: e.path, content: e.content };
  });
}
