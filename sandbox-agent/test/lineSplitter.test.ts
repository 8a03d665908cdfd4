/**
 * The one line splitter (sandbox-agent/src/lineSplitter.ts): lines across chunks, CR and empty
 * lines, and an over-long line dropped whole (its tail up to the newline is never a line).
 */
import { describe, expect, it } from 'vitest';
import { lineSplitter } from '../src/lineSplitter.js';

function split(chunks: string[], max?: number) {
  const lines: string[] = [];
  const tooLong: number[] = [];
  const push = lineSplitter(
    (l) => lines.push(l),
    (n) => tooLong.push(n),
    max,
  );
  for (const c of chunks) push(Buffer.from(c));
  return { lines, tooLong };
}

describe('lineSplitter', () => {
  it('joins a line split across chunks and splits several lines in one chunk', () => {
    expect(split(['{"a":', '1}\n{"b":2}\n{"c"', ':3}\n']).lines).toEqual([
      '{"a":1}',
      '{"b":2}',
      '{"c":3}',
    ]);
  });

  it('drops a trailing CR and skips empty lines', () => {
    expect(split(['one\r\n\n\r\ntwo\n']).lines).toEqual(['one', 'two']);
  });

  it('drops an over-long line whole: the rest after the limit is not passed on as a line', () => {
    const { lines, tooLong } = split(['ok\n', 'x'.repeat(8), 'y'.repeat(8), 'TAIL\nnext\n'], 10);
    expect(tooLong).toHaveLength(1);
    expect(tooLong[0]).toBeGreaterThan(10);
    expect(lines).toEqual(['ok', 'next']);
  });

  it('drops an over-long line that arrives whole in one chunk, newline included', () => {
    const { lines, tooLong } = split(['before\n' + 'z'.repeat(30) + '\nafter\n'], 10);
    expect(tooLong).toEqual([30]);
    expect(lines).toEqual(['before', 'after']);
  });

  it('drops an over-long line whose newline comes in a later chunk, keeps the next', () => {
    const { lines, tooLong } = split(['a'.repeat(30), 'b\nafter\n'], 10);
    expect(tooLong).toHaveLength(1);
    expect(lines).toEqual(['after']);
  });
});
