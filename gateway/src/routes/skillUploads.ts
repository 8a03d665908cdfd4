import type { FastifyRequest } from 'fastify';
import { finished } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { invalid, SKILL_LIMITS, type SkillFileInput } from '@agentfleet/core';

/**
 * Request bodies of skill uploads, read with bounded memory. Guarantees (400 naming the field
 * and the limit; proved by test/e2e/skills/skills-api.test.ts "bad input"):
 * - multipart: file parts `files[]` (the SDK), `files` or `file`; at most SKILL_LIMITS.maxFiles
 *   files and maxTotalBytes bytes in all (a part is cut at the limit, never buffered past it,
 *   and the rest of the body drained so the client gets the 400); only the named text fields;
 * - JSON: `{files: [{filename, content, encoding?: 'utf8'|'base64'}], ...fields}`.
 */
export interface SkillUpload {
  files: SkillFileInput[];
  fields: Map<string, string>;
}

/** Reads a multipart upload; `fileFields` name the file parts, `textFields` the others. */
export async function readMultipartUpload(
  req: FastifyRequest,
  fileFields: string[],
  textFields: string[],
  maxBytes: number = SKILL_LIMITS.maxTotalBytes,
): Promise<SkillUpload> {
  const files: SkillFileInput[] = [];
  const fields = new Map<string, string>();
  let total = 0;
  let problem: Error | null = null;
  const fail = (e: Error) => (problem ??= e);
  for await (const part of req.parts()) {
    if (part.type === 'file') {
      const file = part.file as Readable & { truncated?: boolean };
      if (!fileFields.includes(part.fieldname)) {
        fail(
          invalid(part.fieldname, `is not a known file field (expected ${fileFields.join(', ')})`),
        );
      } else if (files.length >= SKILL_LIMITS.maxFiles) {
        fail(
          invalid(
            part.fieldname,
            `more than ${SKILL_LIMITS.maxFiles} files (limit ${SKILL_LIMITS.maxFiles})`,
          ),
        );
      } else if (!problem) {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of file) {
          size += (chunk as Buffer).byteLength;
          if (total + size > maxBytes) break;
          chunks.push(chunk as Buffer);
        }
        total += size;
        if (total > maxBytes || file.truncated)
          fail(invalid(part.fieldname, `the upload exceeds the ${maxBytes}-byte limit`));
        else files.push({ filename: part.filename ?? '', content: Buffer.concat(chunks) });
      }
      file.resume();
      if (!file.readableEnded) await finished(file).catch(() => {});
    } else {
      if (!textFields.includes(part.fieldname))
        fail(invalid(part.fieldname, `is not a known field (expected ${textFields.join(', ')})`));
      else if (part.valueTruncated) fail(invalid(part.fieldname, 'is too long'));
      else if (fields.has(part.fieldname)) fail(invalid(part.fieldname, 'must be given once'));
      else fields.set(part.fieldname, String(part.value));
    }
  }
  if (problem) throw problem;
  return { files, fields };
}

/** The JSON form: `{files: [{filename, content, encoding?}], ...}`; text fields are strings. */
export function readJsonUpload(body: unknown, textFields: string[]): SkillUpload {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw invalid('body', 'a JSON object with files is required');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b))
    if (k !== 'files' && !textFields.includes(k))
      throw invalid(k, `is not a known field (expected files, ${textFields.join(', ')})`);
  if (!Array.isArray(b.files)) throw invalid('files', 'must be an array of {filename, content}');
  if (b.files.length > SKILL_LIMITS.maxFiles)
    throw invalid(
      'files',
      `more than ${SKILL_LIMITS.maxFiles} files (limit ${SKILL_LIMITS.maxFiles})`,
    );
  const files = b.files.map((f: unknown, i: number): SkillFileInput => {
    const at = `files[${i}]`;
    if (!f || typeof f !== 'object' || Array.isArray(f))
      throw invalid(at, 'must be an object {filename, content}');
    const { filename, content, encoding, ...rest } = f as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw invalid(`${at}.${extra}`, 'is not a known field');
    if (typeof filename !== 'string') throw invalid(`${at}.filename`, 'must be a string');
    if (typeof content !== 'string') throw invalid(`${at}.content`, 'must be a string');
    if (encoding !== undefined && encoding !== 'utf8' && encoding !== 'base64')
      throw invalid(`${at}.encoding`, "must be 'utf8' or 'base64'");
    if (encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(content))
      throw invalid(`${at}.content`, 'is not valid base64');
    return {
      filename,
      content: Buffer.from(content, encoding === 'base64' ? 'base64' : 'utf8'),
    };
  });
  const fields = new Map<string, string>();
  for (const k of textFields) {
    const v = b[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') throw invalid(k, 'must be a string');
    fields.set(k, v);
  }
  return { files, fields };
}
