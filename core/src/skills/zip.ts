import { Unzip, UnzipInflate, unzipSync, zipSync, type Zippable } from 'fflate';
import { invalid } from '../errors.js';
import { checkSkillPath, SKILL_LIMITS } from './parse.js';
import type { SkillFileInput } from './records.js';

/**
 * Zip archives of skills, read and written with fflate. Guarantees of `readZip` (each a 400
 * naming `field`; proved by test/e2e/skills/skills-api.test.ts "zip upload" and "bad input"):
 * - at most `maxEntries` file entries and `maxTotalBytes` uncompressed bytes: checked against
 *   the central directory's declared sizes BEFORE inflating, and again while inflating (an
 *   entry that inflates past its declared size or past the total stops at the limit: a zip
 *   bomb is refused with bounded memory);
 * - every entry name is a clean relative path (parse.ts checkSkillPath: no traversal, no
 *   absolute path, no backslash or NUL); directory entries and `__MACOSX/` are skipped.
 * `writeZip` puts every file under one top-level directory (the skill name), the form the SDK
 * uploads and that `readZip` + parseSkillFiles read back.
 */
export interface ZipLimits {
  maxEntries: number;
  maxTotalBytes: number;
}
export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: SKILL_LIMITS.maxFiles,
  maxTotalBytes: SKILL_LIMITS.maxTotalBytes,
};

const skipped = (name: string) => name.endsWith('/') || name.startsWith('__MACOSX/');

export function readZip(
  bytes: Uint8Array,
  limits: ZipLimits = DEFAULT_ZIP_LIMITS,
  field = 'file',
): SkillFileInput[] {
  // Pass 1: the central directory only (the filter declines every entry: nothing inflates).
  const declared = new Map<string, number>();
  let declaredTotal = 0;
  try {
    unzipSync(bytes, {
      filter: (info) => {
        if (skipped(info.name)) return false;
        checkSkillPath(info.name, field);
        if (declared.has(info.name)) throw invalid(field, `zip entry "${info.name}" appears twice`);
        declared.set(info.name, info.originalSize);
        declaredTotal += info.originalSize;
        if (declared.size > limits.maxEntries)
          throw invalid(field, `zip has more than ${limits.maxEntries} entries (limit)`);
        if (declaredTotal > limits.maxTotalBytes)
          throw invalid(
            field,
            `zip declares more than ${limits.maxTotalBytes} uncompressed bytes (limit)`,
          );
        return false;
      },
    });
  } catch (err) {
    if (err instanceof Error && err.name === 'ApiError') throw err;
    throw invalid(field, 'is not a valid zip archive');
  }
  // Pass 2: inflate, counting real bytes; stop at the limits whatever the headers said.
  const out: SkillFileInput[] = [];
  let total = 0;
  let failure: Error | null = null;
  const unzip = new Unzip((file) => {
    if (failure || skipped(file.name)) return;
    if (!declared.has(file.name)) {
      failure = invalid(field, `zip entry "${file.name.slice(0, 100)}" is not in its directory`);
      return;
    }
    const limit = declared.get(file.name)!;
    const chunks: Uint8Array[] = [];
    let size = 0;
    file.ondata = (err, data, final) => {
      if (failure) return;
      if (err) {
        failure = invalid(field, `zip entry "${file.name}" cannot be read: ${err.message}`);
        return;
      }
      size += data.byteLength;
      total += data.byteLength;
      if (size > limit || total > limits.maxTotalBytes) {
        failure = invalid(
          field,
          `zip inflates past its declared sizes or the ${limits.maxTotalBytes}-byte limit (zip bomb)`,
        );
        file.terminate();
        return;
      }
      chunks.push(data);
      if (final) out.push({ filename: file.name, content: concat(chunks, size) });
    };
    try {
      file.start();
    } catch (err) {
      failure = invalid(field, `zip entry "${file.name}": ${(err as Error).message}`);
    }
  });
  unzip.register(UnzipInflate);
  try {
    // Fed in slices so a failure stops the work early.
    for (let i = 0; i < bytes.byteLength && !failure; i += 64 * 1024)
      unzip.push(bytes.subarray(i, i + 64 * 1024), i + 64 * 1024 >= bytes.byteLength);
  } catch (err) {
    if (!failure)
      failure = invalid(field, `is not a valid zip archive (${(err as Error).message})`);
  }
  if (failure) throw failure;
  if (out.length !== declared.size) throw invalid(field, 'zip entries could not all be read');
  return out;
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const buf = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    buf.set(c, at);
    at += c.byteLength;
  }
  return buf;
}

/** A zip with every file under `${dir}/`. */
export function writeZip(dir: string, files: Array<{ filename: string; data: Uint8Array }>) {
  const z: Zippable = {};
  for (const f of files) z[`${dir}/${f.filename}`] = [f.data, { level: 6 }];
  return zipSync(z);
}
