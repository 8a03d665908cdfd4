/**
 * Memory paths (SDK MemoryCreateParams.path): `/`-rooted, 1 to 20 segments, no empty, `.` or
 * `..` segment, no control or format characters and no U+2028/U+2029, Unicode NFC, at most
 * 1,024 UTF-8 bytes; case-sensitive. A bad path is a 400 naming the field. Two paths overlap
 * when equal or when one is an ancestor of the other (`/notes` and `/notes/todo.md`).
 * Proved by test/e2e/memory/memory-stores.test.ts ("paths").
 */
import { invalid } from '../errors.js';

export const MAX_PATH_BYTES = 1024;
export const MAX_PATH_SEGMENTS = 20;
const FORBIDDEN = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Text that UTF-8 can hold (no lone surrogate), else a 400 naming `field`. */
export function checkWellFormed(text: string, field: string): string {
  if (LONE_SURROGATE.test(text)) throw invalid(field, 'must be valid Unicode (no lone surrogates)');
  return text;
}

/** Returns the path unchanged when valid; throws a 400 naming `field` otherwise. */
export function checkMemoryPath(path: string, field = 'path'): string {
  if (!path.startsWith('/')) throw invalid(field, "must start with '/' (e.g. /notes/todo.md)");
  checkWellFormed(path, field);
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES)
    throw invalid(field, `must be at most ${MAX_PATH_BYTES} bytes`);
  if (FORBIDDEN.test(path))
    throw invalid(field, 'must not contain control or format characters, U+2028 or U+2029');
  if (path.normalize('NFC') !== path) throw invalid(field, 'must be in Unicode NFC');
  const segments = path.slice(1).split('/');
  if (segments.length > MAX_PATH_SEGMENTS)
    throw invalid(field, `must have at most ${MAX_PATH_SEGMENTS} segments`);
  for (const s of segments) {
    if (s === '') throw invalid(field, 'must not have empty segments (no trailing or double /)');
    if (s === '.' || s === '..') throw invalid(field, "must not have '.' or '..' segments");
  }
  return path;
}

/** `path_prefix` of a list: a path that ends with `/` (or just `/`). */
export function checkPathPrefix(prefix: string): string {
  if (!prefix.endsWith('/')) throw invalid('path_prefix', "must end with '/' (e.g. /notes/)");
  if (prefix !== '/') checkMemoryPath(prefix.slice(0, -1), 'path_prefix');
  return prefix;
}

/** Every strict ancestor of a path (`/a/b/c` → `/a`, `/a/b`). */
export function ancestorsOf(path: string): string[] {
  const segs = path.slice(1).split('/');
  const out: string[] = [];
  for (let i = 1; i < segs.length; i++) out.push('/' + segs.slice(0, i).join('/'));
  return out;
}

/** A store filter on `path` matching every path that starts with `prefix` (which ends in `/`). */
export function underPrefix(prefix: string): Record<string, string> {
  // '/' + 1 is '0': every string starting with `prefix` sorts in [prefix, prefix-without-/ + '0').
  return { $gte: prefix, $lt: prefix.slice(0, -1) + '0' };
}
