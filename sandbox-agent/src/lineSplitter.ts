/**
 * The one line splitter of the sandbox protocol, used by the agent, the Nomad launcher (both
 * directions) and the host's client. Splits a byte stream into lines without quadratic
 * concatenation (archives travel as one long line); a trailing CR is dropped, empty lines are
 * skipped. A line over `maxLineBytes` (default MAX_LINE_BYTES, 400 MiB: V8 strings top out near
 * 512 MiB; or a function asked as the line grows, for a limit that changes: the host's client
 * allows what its pending calls may be answered with) is reported to `onTooLong` and dropped
 * WHOLE: the bytes after the limit, up to its newline, are discarded too, never passed on as a
 * line of their own. The bytes held are never more than the limit plus one chunk.
 *
 * Proved by sandbox-agent/test/lineSplitter.test.ts.
 */
import { MAX_LINE_BYTES } from './protocol.js';

export function lineSplitter(
  onLine: (line: string) => void,
  onTooLong: (bytes: number) => void = () => {},
  maxLineBytes: number | (() => number) = MAX_LINE_BYTES,
): (chunk: Buffer) => void {
  const limit = typeof maxLineBytes === 'function' ? maxLineBytes : () => maxLineBytes;
  let parts: Buffer[] = [];
  let size = 0;
  let dropping = false;
  return (chunk: Buffer) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        if (start < chunk.length && !dropping) {
          parts.push(chunk.subarray(start));
          size += chunk.length - start;
          if (size > limit()) {
            onTooLong(size);
            parts = [];
            size = 0;
            dropping = true;
          }
        }
        return;
      }
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (dropping) {
        dropping = false;
        continue;
      }
      if (size + piece.length > limit()) {
        // the whole line arrived before its size was checked: dropped all the same
        onTooLong(size + piece.length);
        parts = [];
        size = 0;
        continue;
      }
      let line: string;
      if (parts.length) {
        parts.push(piece);
        line = Buffer.concat(parts, size + piece.length).toString('utf8');
        parts = [];
        size = 0;
      } else line = piece.toString('utf8');
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line.length) onLine(line);
    }
  };
}
