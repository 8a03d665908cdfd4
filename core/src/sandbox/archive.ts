/**
 * Streaming reader for tar.gz archives that come from a sandbox (untrusted input), with
 * tar-stream and zlib streams: entries are handed over one at a time as their bytes arrive, so
 * the host never holds an archive, or a whole file, in memory.
 *
 * Guarantees (tested in core/test/sandbox.outputs.test.ts, "streaming archive reader"):
 * - a regular file whose declared size is over `maxFileBytes` is skipped (`file_too_large`), its
 *   bytes drained without being kept; the file handler never sees more than `maxFileBytes`;
 * - names that are absolute, contain a `..` segment, a backslash or a control character, or are
 *   not valid UTF-8 are skipped (`invalid_name`), as is anything the caller's `checkName` refuses;
 * - symlinks, hardlinks, devices and fifos are skipped (`not_a_regular_file`); directories are
 *   ignored silently;
 * - the decompressed stream is cut at `maxTotalBytes` and the entry count at `maxEntries`
 *   (ArchiveLimitError): a gzip bomb of zeros costs bounded CPU time and no memory;
 * - a broken archive (bad gzip, bad header, truncated) fails with ArchiveFormatError; the files
 *   handed over before that stay handed over;
 * - one skipped or refused entry never stops the entries after it.
 */
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract, type Header } from 'tar-stream';

export type ArchiveSkipReason = 'file_too_large' | 'invalid_name' | 'not_a_regular_file';

export interface ArchiveFile {
  /** Relative `/`-separated name, without a leading `./`. */
  name: string;
  /** Size from the header (the data handed over is exactly this long). */
  size: number;
  mode: number;
  /** Modification time, whole seconds since the epoch (0 when the header has none). */
  mtime: number;
  /** The file's bytes; consume it (or not: the reader drains what is left). */
  data: AsyncIterable<Uint8Array>;
}

export interface ArchiveReadOptions {
  maxFileBytes: number;
  /** Decompressed bytes (headers included) after which the archive is abandoned. */
  maxTotalBytes: number;
  /** Entries (of any type) after which the archive is abandoned (default 100,000). */
  maxEntries?: number;
  /** Extra name policy: a message saying why `name` is refused, or null. */
  checkName?: (name: string) => string | null;
}

export interface ArchiveHandlers {
  file(f: ArchiveFile): Promise<void>;
  skip(name: string, reason: ArchiveSkipReason, message: string): void | Promise<void>;
}

/** The archive broke a reader limit (total bytes, entry count): reading stopped. */
export class ArchiveLimitError extends Error {
  override readonly name = 'ArchiveLimitError';
}

/** The bytes are not a readable tar.gz (bad gzip, bad header, truncated). */
export class ArchiveFormatError extends Error {
  override readonly name = 'ArchiveFormatError';
}

const DEFAULT_MAX_ENTRIES = 100_000;

class HandlerFailure extends Error {
  constructor(override readonly cause: unknown) {
    super('file handler failed');
  }
}

/** Why a tar entry name is unusable whatever the caller's policy, or null. */
export function unsafeEntryName(name: string): string | null {
  if (!name) return 'the name is empty';
  if (name.includes('\uFFFD')) return 'the name is not valid UTF-8';
  if (name.startsWith('/')) return 'the name is an absolute path';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'the name contains control characters';
  if (name.includes('\\')) return 'the name contains a backslash';
  if (name.split('/').some((s) => s === '..')) return "the name contains a '..' segment";
  return null;
}

const printable = (name: string) => JSON.stringify(name).slice(1, -1).slice(0, 300);

/**
 * Reads a tar.gz from `source`, calling `handlers.file` for each acceptable regular file (in
 * archive order, one at a time) and `handlers.skip` for each refused entry. Resolves with the
 * number of entries seen. A handler that throws stops the reading and the error propagates.
 */
export async function readTarGz(
  source: Readable,
  options: ArchiveReadOptions,
  handlers: ArchiveHandlers,
): Promise<{ entries: number }> {
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  let total = 0;
  let failure: Error | null = null;
  const fail = (err: Error) => {
    failure ??= err;
    source.unpipe?.();
    source.destroy();
    gunzip.destroy();
    counter.destroy();
    ex.destroy(failure);
  };
  const gunzip = createGunzip();
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      total += chunk.length;
      if (total > options.maxTotalBytes)
        return cb(
          new ArchiveLimitError(`the archive unpacks to more than ${options.maxTotalBytes} bytes`),
        );
      cb(null, chunk);
    },
  });
  const ex = tarExtract();
  source.on('error', (err) =>
    fail(new ArchiveFormatError(`reading the archive failed: ${err.message}`)),
  );
  gunzip.on('error', (err) =>
    fail(new ArchiveFormatError(`the archive is not valid gzip data: ${err.message}`)),
  );
  counter.on('error', (err) => fail(err));
  source
    .pipe(gunzip)
    .pipe(counter)
    .pipe(ex as unknown as NodeJS.WritableStream);

  let entries = 0;
  try {
    for await (const entry of ex) {
      const h: Header = entry.header;
      const it = entry[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      const drain = async () => {
        while (!(await it.next()).done) {
          /* discard */
        }
      };
      if (++entries > maxEntries)
        throw new ArchiveLimitError(`the archive has more than ${maxEntries} entries`);
      const name = h.name.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
      if (h.type === 'directory' || name === '' || name === '.') {
        await drain();
        continue;
      }
      const why = unsafeEntryName(name) ?? options.checkName?.(name) ?? null;
      if (why) {
        await handlers.skip(name, 'invalid_name', `output '${printable(name)}' skipped: ${why}`);
        await drain(); // reported first: a truncated archive still names it
        continue;
      }
      if (h.type !== 'file' && h.type !== 'contiguous-file') {
        await handlers.skip(
          name,
          'not_a_regular_file',
          `output '${printable(name)}' skipped: not a regular file (${h.type})`,
        );
        await drain(); // reported first: a truncated archive still names it
        continue;
      }
      const size = h.size ?? 0;
      if (size > options.maxFileBytes) {
        await handlers.skip(
          name,
          'file_too_large',
          `output '${printable(name)}' skipped: ${size} bytes is over the ${options.maxFileBytes}-byte limit per file`,
        );
        await drain(); // reported first: a truncated archive still names it
        continue;
      }
      let seen = 0;
      const data: AsyncIterable<Uint8Array> = {
        [Symbol.asyncIterator]: () => ({
          async next() {
            const r = await it.next();
            if (r.done) return r;
            seen += r.value.length;
            // tar-stream hands over exactly the header's size; this holds even if it did not
            if (seen > options.maxFileBytes)
              throw new ArchiveLimitError(
                `output '${printable(name)}' is longer than its header says`,
              );
            return r;
          },
          // stopping early leaves the entry to the drain below (never destroys the archive)
          async return() {
            return { done: true as const, value: undefined };
          },
        }),
      };
      try {
        await handlers.file({
          name,
          size,
          mode: h.mode ?? 0o644,
          mtime: h.mtime ? Math.floor(h.mtime.getTime() / 1000) : 0,
          data,
        });
      } catch (err) {
        throw new HandlerFailure(err);
      }
      await drain();
    }
  } catch (err) {
    // the handler's own errors propagate as they are; anything else is the archive's fault
    const e =
      err instanceof HandlerFailure
        ? (err.cause as Error)
        : err instanceof ArchiveLimitError || err instanceof ArchiveFormatError
          ? err
          : new ArchiveFormatError(
              `the archive is broken: ${(err as Error)?.message ?? String(err)}`,
            );
    fail(e);
    throw failure ?? e;
  }
  if (failure) throw failure;
  return { entries };
}
