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
 * - bounded: a file is read only if it is at most FileService.maxBytes (the upload cap,
 *   MAX_FILE_BYTES); each file is read once per request however often it appears;
 * - a file that was checked at send time (core/src/domain/inputEvents.ts) but is gone, expired,
 *   too large or of another kind by the time of a later request becomes a text block saying
 *   so, so the session keeps working and the model is told what is missing.
 * url and base64 sources pass through unchanged.
 * Proved by test/file-blocks.test.ts (both protocols) and test/python/sdk_suite/test_file_blocks.py.
 */
import {
  fileBlockKind,
  type ChatMessage,
  type ContentBlock,
  type FileService,
} from '@agentfleet/core';

/** The file's bytes and bare media type, or why it cannot be sent. */
type Resolved = { mime: string; data: Uint8Array } | string;

/** A copy of `messages` with every file-sourced block replaced by its content. */
export async function resolveFileBlocks(
  files: FileService,
  tenant: string,
  messages: ChatMessage[],
): Promise<ChatMessage[]> {
  if (!messages.some((m) => m.content.some(hasFileSource))) return messages;
  const cache = new Map<string, Promise<Resolved>>();
  const read = (id: string) => {
    let r = cache.get(id);
    if (!r) cache.set(id, (r = readFile(files, tenant, id)));
    return r;
  };
  const resolveBlock = async (b: any): Promise<any> => {
    if (b?.type === 'tool_result' && Array.isArray(b.content))
      return { ...b, content: await Promise.all(b.content.map(resolveBlock)) };
    if (!isFileSourced(b)) return b;
    return toBlock(b, await read(String(b.source.file_id)));
  };
  return Promise.all(
    messages.map(async (m) =>
      m.role === 'assistant'
        ? m
        : { ...m, content: (await Promise.all(m.content.map(resolveBlock))) as ContentBlock[] },
    ),
  );
}

const isFileSourced = (b: any): boolean =>
  (b?.type === 'image' || b?.type === 'document') && b.source?.type === 'file';

const hasFileSource = (b: any): boolean =>
  isFileSourced(b) ||
  (b?.type === 'tool_result' && Array.isArray(b.content) && b.content.some(isFileSourced));

async function readFile(files: FileService, tenant: string, id: string): Promise<Resolved> {
  let meta;
  try {
    meta = await files.get(tenant, id);
  } catch {
    return `file ${id} is no longer available (deleted)`;
  }
  if (!meta.downloadable) return `file ${id} (${meta.filename}) is no longer available (expired)`;
  if (meta.size_bytes > files.maxBytes)
    return `file ${id} (${meta.filename}) is larger than the ${files.maxBytes}-byte limit`;
  try {
    const { data } = await files.content(tenant, id);
    return { mime: meta.mime_type.split(';')[0]!.trim().toLowerCase(), data };
  } catch {
    return `file ${id} (${meta.filename}) is no longer available`;
  }
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
