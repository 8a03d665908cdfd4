/**
 * The agent's file operations: readFile, writeFile, edit, glob, grep, list.
 */
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { AgentError, DEFAULT_CWD, DEFAULT_GREP_MAX_MATCHES, MAX_READ_BYTES } from '../protocol.js';
import { glob, globMatcher, readDirSafe } from './glob.js';
import { absPath, fsError, num, str, type Params } from './params.js';

export const isBinary = (buf: Buffer) => buf.indexOf(0) !== -1;

export async function readTextFile(p: string, op: string): Promise<string> {
  let st: Stats;
  try {
    st = await fsp.stat(p);
  } catch (err) {
    throw fsError(err, op, p);
  }
  if (st.isDirectory())
    throw new AgentError('is_directory', `${op}: ${p} is a directory`, { path: p });
  if (st.size > MAX_READ_BYTES)
    throw new AgentError(
      'too_large',
      `${op}: ${p} is ${st.size} bytes, over the ${MAX_READ_BYTES}-byte limit`,
      { path: p },
    );
  let buf: Buffer;
  try {
    buf = await fsp.readFile(p);
  } catch (err) {
    throw fsError(err, op, p);
  }
  if (isBinary(buf))
    throw new AgentError('binary_file', `${op}: ${p} is a binary file`, { path: p });
  return buf.toString('utf8');
}

export async function readFileOp(p: Params) {
  const file = absPath(p, 'path', 'readFile');
  const offset = Math.max(1, num(p, 'offset', 'readFile', 1, 0, Number.MAX_SAFE_INTEGER));
  const limit = num(p, 'limit', 'readFile', Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER);
  const text = await readTextFile(file, 'readFile');
  const lines = text === '' ? [] : text.split('\n');
  const trailingNewline = text.endsWith('\n');
  if (trailingNewline) lines.pop();
  const slice = lines.slice(offset - 1, offset - 1 + limit);
  const toEnd = offset - 1 + slice.length >= lines.length;
  const content = slice.join('\n') + (toEnd && trailingNewline && slice.length ? '\n' : '');
  return { content, totalLines: lines.length };
}

export async function writeFileOp(p: Params) {
  const file = absPath(p, 'path', 'writeFile');
  const mode =
    p.mode === undefined || p.mode === null
      ? undefined
      : num(p, 'mode', 'writeFile', 0o644, 0, 0o7777);
  let data: Buffer;
  if (typeof p.contentBase64 === 'string') data = Buffer.from(p.contentBase64, 'base64');
  else if (typeof p.content === 'string') data = Buffer.from(p.content, 'utf8');
  else
    throw new AgentError(
      'invalid_params',
      "writeFile: 'content' (string) or 'contentBase64' is required",
      { argument: 'content' },
    );
  try {
    await fsp.mkdir(path.posix.dirname(file), { recursive: true });
    await fsp.writeFile(file, data, mode === undefined ? {} : { mode });
    if (mode !== undefined) await fsp.chmod(file, mode);
  } catch (err) {
    throw fsError(err, 'writeFile', file);
  }
  return null;
}

export function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export async function editOp(p: Params) {
  const file = absPath(p, 'path', 'edit');
  const oldString = str(p, 'oldString', 'edit');
  const newString = str(p, 'newString', 'edit');
  const replaceAll = p.replaceAll === true;
  if (oldString === '')
    throw new AgentError('invalid_params', `edit: ${file}: 'oldString' must not be empty`, {
      path: file,
      argument: 'oldString',
    });
  if (oldString === newString)
    throw new AgentError(
      'invalid_params',
      `edit: ${file}: 'oldString' and 'newString' are the same`,
      { path: file, argument: 'newString' },
    );
  const text = await readTextFile(file, 'edit');
  const n = countOccurrences(text, oldString);
  if (n === 0)
    throw new AgentError('no_match', `edit: ${file}: 'oldString' was not found`, {
      path: file,
      argument: 'oldString',
    });
  if (n > 1 && !replaceAll) {
    throw new AgentError(
      'not_unique',
      `edit: ${file}: 'oldString' occurs ${n} times; add context to make it unique or set replaceAll`,
      { path: file, argument: 'oldString' },
    );
  }
  const next = replaceAll
    ? text.split(oldString).join(newString)
    : text.replace(oldString, () => newString);
  try {
    await fsp.writeFile(file, next, 'utf8');
  } catch (err) {
    throw fsError(err, 'edit', file);
  }
  return { replacements: replaceAll ? n : 1 };
}

export async function globOp(p: Params) {
  const pattern = str(p, 'pattern', 'glob');
  if (!pattern)
    throw new AgentError('invalid_params', "glob: 'pattern' must not be empty", {
      argument: 'pattern',
    });
  const cwd = absPath(p, 'cwd', 'glob', DEFAULT_CWD);
  return glob(pattern, cwd);
}

export function compileRegex(pattern: string, method: string): RegExp {
  let flags = '';
  const inline = /^\(\?([ims]+)\)/.exec(pattern);
  if (inline) {
    flags = [...new Set(inline[1])].join('');
    pattern = pattern.slice(inline[0].length);
  }
  try {
    return new RegExp(pattern, flags);
  } catch (err) {
    throw new AgentError(
      'invalid_params',
      `${method}: 'pattern' is not a valid regular expression: ${(err as Error).message}`,
      { argument: 'pattern' },
    );
  }
}

export const GREP_SKIP_DIRS = new Set(['.git', 'node_modules']);
export const GREP_MAX_FILE_BYTES = 8 * 1024 * 1024;

export async function grepOp(p: Params) {
  const re = compileRegex(str(p, 'pattern', 'grep'), 'grep');
  const root = absPath(p, 'path', 'grep', DEFAULT_CWD);
  const g = str(p, 'glob', 'grep', true);
  const max = num(p, 'maxMatches', 'grep', DEFAULT_GREP_MAX_MATCHES, 1, 100_000);
  const m = g ? globMatcher(g) : null;
  // a glob with a slash matches the path relative to `path`, one without matches the file name
  const filter =
    m && g ? (rel: string) => m(g.includes('/') ? rel : path.posix.basename(rel)) : null;
  let st: Stats;
  try {
    st = await fsp.stat(root);
  } catch (err) {
    throw fsError(err, 'grep', root);
  }
  const matches: Array<{ path: string; line: number; text: string }> = [];
  const scanFile = async (file: string) => {
    let buf: Buffer;
    try {
      const s = await fsp.stat(file);
      if (s.size > GREP_MAX_FILE_BYTES) return;
      buf = await fsp.readFile(file);
    } catch {
      return;
    }
    if (isBinary(buf)) return;
    const lines = buf.toString('utf8').split('\n');
    for (let i = 0; i < lines.length && matches.length < max; i++) {
      let line = lines[i]!;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (re.test(line))
        matches.push({
          path: file,
          line: i + 1,
          text: line.length > 1000 ? `${line.slice(0, 1000)}…` : line,
        });
    }
  };
  if (!st.isDirectory()) {
    await scanFile(root);
    return matches;
  }
  const walk = async (dir: string): Promise<void> => {
    for (const d of await readDirSafe(dir)) {
      if (matches.length >= max) return;
      const full = path.posix.join(dir, d.name);
      if (d.isDirectory()) {
        if (!GREP_SKIP_DIRS.has(d.name)) await walk(full);
      } else if (d.isFile()) {
        if (!filter || filter(path.posix.relative(root, full))) await scanFile(full);
      }
    }
  };
  await walk(root);
  return matches;
}

export async function listOp(p: Params) {
  const dir = absPath(p, 'dir', 'list');
  let dirents;
  try {
    dirents = await fsp.readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw fsError(err, 'list', dir);
  }
  const out: Array<{ name: string; size: number; isDirectory: boolean }> = [];
  for (const d of dirents.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    try {
      const s = await fsp.stat(path.posix.join(dir, d.name));
      out.push({ name: d.name, size: s.isDirectory() ? 0 : s.size, isDirectory: s.isDirectory() });
    } catch {
      out.push({ name: d.name, size: 0, isDirectory: false });
    }
  }
  return out;
}
