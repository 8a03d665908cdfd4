/**
 * File-sourced content blocks (`{type: 'image' | 'document', source: {type: 'file', file_id}}`
 * in user messages and custom tool results) resolved at request build time, so the model gets
 * the bytes and never our file id; the bytes are never stored in events.
 * Guarantees:
 * - tenant-scoped: a file is read only through the session's tenant (FileService.content);
 * - an image becomes a base64 source with the file's media type; a PDF document a base64
 *   `application/pdf` source; a text document (text/*, JSON, XML, YAML) a `text/plain` text
 *   source; each adapter maps those for its protocol (OpenAI: image_url data URL, file input,
 *   text part);
 * - bounded: the files of one request are read up to FileService.maxBytes in all (the upload
 *   cap, MAX_FILE_BYTES, default 32 MiB), newest first, each once however often it appears;
 *   an older file past that budget becomes a text note saying it was left out;
 * - a file that was checked at send time (core/src/sessions/inputEvents.ts) but is gone or
 *   expired by the time of a later request becomes a text block saying so, so the session
 *   keeps working and the model is told what is missing.
 * url and base64 sources pass through unchanged, and so does every message without a
 * file-sourced block (the same object); a kept history's leading frozen messages without one are
 * scanned once per session, not on every request.
 * Proved by test/e2e/files/file-blocks.test.ts (both protocols) and test/e2e/sdk/sdk_suite/test_file_blocks.py.
 */
import {
  fileBlockKind,
  PrefixMemo,
  type ChatMessage,
  type ContentBlock,
  type FileService,
} from '@agentfleet/core';

/** The file's bytes and bare media type, or why it cannot be sent. */
type Resolved = { mime: string; data: Uint8Array } | string;

/**
 * A copy of `messages` with every file-sourced block replaced by its content. The bytes read
 * for one request are at most `files.maxBytes` in all (the upload cap, so any one file fits):
 * the newest files are kept first, and an older file past that budget becomes a text note.
 */
export async function resolveFileBlocks(
  files: FileService,
  tenant: string,
  messages: ChatMessage[],
): Promise<ChatMessage[]> {
  const ids: string[] = [];
  const collect = (b: any) => {
    if (b?.type === 'tool_result' && Array.isArray(b.content)) b.content.forEach(collect);
    else if (isFileSourced(b)) ids.push(String(b.source.file_id));
  };
  const from = scanned.get(messages)?.length ?? 0;
  const holders = new Set<ChatMessage>();
  for (let i = from; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === 'assistant') continue;
    const before = ids.length;
    m.content.forEach(collect);
    if (ids.length > before) holders.add(m);
  }
  rememberFileFree(messages, from, holders);
  if (!ids.length) return messages;
  const resolved = await readWithinBudget(files, tenant, [...new Set(ids)]);
  const resolveBlock = (b: any): any => {
    if (b?.type === 'tool_result' && Array.isArray(b.content))
      return { ...b, content: b.content.map(resolveBlock) };
    return isFileSourced(b) ? toBlock(b, resolved.get(String(b.source.file_id))!) : b;
  };
  // Only the messages that hold a file are copied: the others stay the history's frozen objects,
  // whose request bytes are kept between calls (core/src/models/wireText.ts).
  return messages.map((m) =>
    holders.has(m) ? { ...m, content: m.content.map(resolveBlock) as ContentBlock[] } : m,
  );
}

/**
 * Per conversation: its leading frozen messages, known to hold no file-sourced block. A kept
 * history hands back the same frozen objects on every call, so a call on a long session scans
 * only what follows them.
 */
const scanned = new PrefixMemo<true>();

/** Remembers the leading frozen messages without a file (up to the first that has one). */
function rememberFileFree(messages: ChatMessage[], from: number, holders: Set<ChatMessage>) {
  let end = from;
  while (end < messages.length && Object.isFrozen(messages[end]) && !holders.has(messages[end]!))
    end++;
  if (end > from) scanned.set(messages, end, true);
}

const isFileSourced = (b: any): boolean =>
  (b?.type === 'image' || b?.type === 'document') && b.source?.type === 'file';

/** Each file once, newest first against the byte budget; what cannot be sent says why. */
async function readWithinBudget(
  files: FileService,
  tenant: string,
  ids: string[],
): Promise<Map<string, Resolved>> {
  const metas = await Promise.all(ids.map((id) => files.get(tenant, id).catch(() => null)));
  const out = new Map<string, Resolved>();
  let left = files.maxBytes;
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i]!;
    const meta = metas[i];
    if (!meta) out.set(id, `file ${id} is no longer available (deleted)`);
    else if (!meta.downloadable)
      out.set(id, `file ${id} (${meta.filename}) is no longer available (expired)`);
    else if (meta.size_bytes > left)
      out.set(
        id,
        `file ${id} (${meta.filename}) left out: the files of one request are limited to ${files.maxBytes} bytes`,
      );
    else left -= meta.size_bytes;
  }
  await Promise.all(
    ids
      .filter((id) => !out.has(id))
      .map(async (id) => {
        try {
          const { file, data } = await files.content(tenant, id);
          out.set(id, { mime: file.mime_type.split(';')[0]!.trim().toLowerCase(), data });
        } catch {
          out.set(id, `file ${id} is no longer available`);
        }
      }),
  );
  return out;
}

/** The block the model gets for one file-sourced block. */
function toBlock(b: any, r: Resolved): ContentBlock {
  const unavailable = (why: string): ContentBlock => ({ type: 'text', text: `[${why}]` });
  if (typeof r === 'string') return unavailable(r);
  const id = String(b.source.file_id);
  const want = fileBlockKind(b.type, r.mime);
  if (!want) return unavailable(`file ${id} is ${r.mime}, which a ${b.type} block cannot carry`);
  const base64 = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength).toString(
    'base64',
  );
  const { source: _source, ...rest } = b;
  if (want === 'image')
    return { ...rest, type: 'image', source: { type: 'base64', media_type: r.mime, data: base64 } };
  if (want === 'pdf')
    return {
      ...rest,
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: base64 },
    };
  return {
    ...rest,
    type: 'document',
    source: {
      type: 'text',
      media_type: 'text/plain',
      data: new TextDecoder().decode(r.data),
    },
  };
}
