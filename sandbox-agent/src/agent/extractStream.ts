/**
 * `extractOpen`: unpacks a tar.gz written to the stream (streamWrite … streamEnd) into a
 * directory, with the tar CLI or the built-in tar; nothing lands outside the directory.
 */
import { spawn } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as zlib from 'node:zlib';
import { AgentError, MAX_ARCHIVE_BYTES } from '../protocol.js';
import { parseTar } from '../tar.js';
import { spawnTar } from './archiveStream.js';
import { absPath, fsError, type Params } from './params.js';
import { checkStreamRoom, closeStream, registerStream, type OpenStream } from './streams.js';
import { tarCli } from './tarCli.js';
import { extractEntries } from './builtinExtract.js';

export async function extractOpenOp(p: Params) {
  checkStreamRoom('extractOpen');
  const dir = absPath(p, 'dir', 'extractOpen');
  try {
    await fsp.mkdir(dir, { recursive: true });
  } catch (err) {
    throw fsError(err, 'extract', dir);
  }
  let s: OpenStream;
  if (tarCli()) {
    const t = spawnTar(['-xzf', '-', '--no-same-owner', '-C', dir], 'extract', dir, [0]);
    t.child.stdout!.resume();
    s = registerStream({
      op: 'extract',
      dir,
      writable: t.child.stdin!,
      child: t.child,
      stderr: '',
      done: t.done,
    });
  } else {
    // The built-in reader parses whole archives: it collects them here (in the sandbox's own
    // memory, bounded by MAX_ARCHIVE_BYTES), never on the host.
    const parts: Buffer[] = [];
    let size = 0;
    let finish!: () => void;
    const ended = new Promise<void>((r) => {
      finish = r;
    });
    const writable = new Writable({
      write(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > MAX_ARCHIVE_BYTES)
          return cb(
            new AgentError(
              'too_large',
              `extract: ${dir}: the archive exceeds ${MAX_ARCHIVE_BYTES} bytes`,
              { path: dir },
            ),
          );
        parts.push(chunk);
        cb();
      },
      final(cb) {
        finish();
        cb();
      },
    });
    const done = ended.then(async () => {
      let tar: Buffer;
      try {
        tar = zlib.gunzipSync(Buffer.concat(parts, size));
      } catch (err) {
        throw new AgentError(
          'invalid_params',
          `extract: ${dir}: the archive is not gzip data (${(err as Error).message})`,
          { path: dir, argument: 'archive' },
        );
      }
      await extractEntries(dir, parseTar(tar)).catch((err) => {
        throw fsError(err, 'extract', dir);
      });
    });
    done.catch(() => {});
    s = registerStream({ op: 'extract', dir, writable, stderr: '', done });
  }
  return { stream: s.id };
}
