/**
 * A skill's files fetched from its source and verified, before anything is installed.
 *
 * Guarantees (each failure a 400 naming `field`, e.g. `skills[0]`, and the skill; proved by
 * test/e2e/skills/skill-sources.test.ts):
 * - v0.2 entries: the artifact (SKILL.md, .zip or .tar.gz) is downloaded whole (bounded) and
 *   its SHA-256 compared with the index's `digest` BEFORE it is unpacked or parsed; a mismatch
 *   is "digest mismatch" and nothing is installed;
 * - v0.1 entries: each listed file is fetched from next to the index; a per-file digest, when
 *   the index gives one, is verified; the recorded digest is the skill-level digest (SHA-256
 *   over `path\0hex\n` lines sorted by path);
 * - .zip archives are read by ../zip.ts readZip (entry count, total bytes while inflating,
 *   traversal); .tar.gz archives by core/src/sandbox/archive.ts readTarGz with the same limits
 *   (entries, decompressed bytes while inflating, per-file size) and traversal, absolute names,
 *   symlinks, hard links and devices refused; the format is taken from Content-Type, else the
 *   URL's extension, else the leading bytes;
 * - the files then go through ../parse.ts parseSkillFiles (limits, names, SKILL.md
 *   frontmatter), and the SKILL.md `name` must equal the index entry's name.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { ApiError, invalid } from '../../errors.js';
import { readTarGz } from '../../sandbox/archive.js';
import type { SkillFileInput } from '../records.js';
import { parseSkillFiles, SKILL_LIMITS, type ParsedSkill } from '../parse.js';
import { readZip } from '../zip.js';
import type { IndexEntry } from './discoveryIndex.js';
import type { SourceFetcher } from './fetch.js';

/** Archive bytes as downloaded (compressed): the unpacked limit plus slack for headers. */
const MAX_ARCHIVE_BYTES = SKILL_LIMITS.maxTotalBytes + 1024 * 1024;

export interface FetchedSkill extends ParsedSkill {
  /** What an install records: the artifact digest (v0.2) or the skill-level digest (v0.1). */
  digest: string;
}

export const sha256Hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** The RFC's skill-level digest of a set of files. */
export function skillLevelDigest(files: Array<{ path: string; content: Uint8Array }>): string {
  const h = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
    h.update(
      Buffer.concat([
        Buffer.from(f.path),
        Buffer.from([0]),
        Buffer.from(sha256Hex(f.content)),
        Buffer.from('\n'),
      ]),
    );
  return `sha256:${h.digest('hex')}`;
}

/** Downloads, verifies and parses `entry`'s skill. */
export async function fetchSkill(
  http: SourceFetcher,
  entry: IndexEntry,
  field: string,
): Promise<FetchedSkill> {
  const bad = (why: string) => invalid(field, `skill '${entry.name}': ${why}`);
  const download = async (url: string, max: number) => {
    const res = await named(field, bad, () => http.get(new URL(url), field, max));
    if (res.status < 200 || res.status > 299) throw bad(`${url} answered ${res.status}`);
    return res;
  };
  let files: SkillFileInput[];
  let digest: string;
  if (entry.type === 'files') {
    files = [];
    let budget = SKILL_LIMITS.maxTotalBytes;
    for (const ref of entry.files) {
      const res = await download(ref.url, budget);
      budget -= res.bytes.byteLength;
      if (ref.digest && `sha256:${sha256Hex(res.bytes)}` !== ref.digest)
        throw bad(`digest mismatch for ${ref.path}: the index says ${ref.digest}`);
      files.push({ filename: ref.path, content: res.bytes });
    }
    digest = skillLevelDigest(files.map((f) => ({ path: f.filename, content: f.content })));
  } else {
    const res = await download(
      entry.url,
      entry.type === 'archive' ? MAX_ARCHIVE_BYTES : SKILL_LIMITS.maxTotalBytes,
    );
    const actual = `sha256:${sha256Hex(res.bytes)}`;
    if (actual !== entry.digest)
      throw bad(`digest mismatch: the index says ${entry.digest}, the artifact is ${actual}`);
    digest = entry.digest;
    if (entry.type === 'skill-md') files = [{ filename: 'SKILL.md', content: res.bytes }];
    else {
      const format = archiveFormat(res.contentType, res.url, res.bytes);
      if (!format) throw bad('the archive is neither .zip nor .tar.gz');
      files = await named(field, bad, async () =>
        format === 'zip' ? readZip(res.bytes, undefined, field) : readTarGzFiles(res.bytes, field),
      );
    }
  }
  const parsed = await named(field, bad, async () => parseSkillFiles(files, field));
  if (parsed.name !== entry.name)
    throw bad(`SKILL.md names the skill '${parsed.name}', the index '${entry.name}'`);
  return { ...parsed, digest };
}

/** Runs `fn`, re-throwing its 400s as `bad(message)` so they name the skill. */
async function named<T>(field: string, bad: (why: string) => ApiError, fn: () => Promise<T>) {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const m = err.message;
    throw bad(m.startsWith(`${field}: `) ? m.slice(field.length + 2) : m);
  }
}

export function archiveFormat(
  contentType: string,
  url: string,
  bytes: Uint8Array,
): 'zip' | 'tar.gz' | null {
  const ct = contentType.toLowerCase();
  if (ct === 'application/zip' || ct === 'application/x-zip-compressed') return 'zip';
  if (ct === 'application/gzip' || ct === 'application/x-gzip' || ct === 'application/x-tar+gzip')
    return 'tar.gz';
  const path = new URL(url).pathname.toLowerCase();
  if (path.endsWith('.zip')) return 'zip';
  if (path.endsWith('.tar.gz') || path.endsWith('.tgz')) return 'tar.gz';
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) return 'zip';
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'tar.gz';
  return null;
}

/** Every regular file of a .tar.gz, under the skill limits; anything else refused. */
export async function readTarGzFiles(bytes: Uint8Array, field: string): Promise<SkillFileInput[]> {
  const files: SkillFileInput[] = [];
  let refusal: ApiError | null = null;
  let total = 0;
  try {
    await readTarGz(
      Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]),
      {
        maxFileBytes: SKILL_LIMITS.maxTotalBytes,
        // headers and padding: at most 1.5 KiB per entry on top of the files' bytes
        maxTotalBytes: SKILL_LIMITS.maxTotalBytes + 2 * SKILL_LIMITS.maxFiles * 1536 + 10_240,
        maxEntries: 2 * SKILL_LIMITS.maxFiles,
      },
      {
        async file(f) {
          const chunks: Buffer[] = [];
          for await (const c of f.data) chunks.push(Buffer.from(c));
          const content = Buffer.concat(chunks);
          total += content.byteLength;
          if (total > SKILL_LIMITS.maxTotalBytes) {
            refusal = invalid(
              field,
              `the archive holds more than ${SKILL_LIMITS.maxTotalBytes} bytes (limit)`,
            );
            throw refusal;
          }
          files.push({ filename: f.name, content: new Uint8Array(content) });
        },
        skip(name, reason) {
          const what =
            reason === 'not_a_regular_file'
              ? 'is not a regular file (symlinks, hard links and devices are refused)'
              : reason === 'file_too_large'
                ? `is larger than ${SKILL_LIMITS.maxTotalBytes} bytes (limit)`
                : 'is not a clean relative path (absolute, `..` traversal, backslash or control character)';
          refusal = invalid(field, `archive entry ${JSON.stringify(name.slice(0, 100))} ${what}`);
          throw refusal;
        },
      },
    );
  } catch (err) {
    if (refusal) throw refusal;
    throw invalid(field, `the .tar.gz archive cannot be read: ${(err as Error).message}`);
  }
  return files;
}
