/**
 * The sandbox agent: the program that runs INSIDE a sandbox (plain Node, no dependencies but
 * `node:` builtins, so the compiled file can be copied or bind-mounted alone) and serves the
 * sandbox protocol (protocol.ts) on stdin/stdout: JSON-RPC 2.0, one message per line, binary
 * payloads base64. Method names are the SandboxAgentApi methods.
 *
 * Started as `node agent.mjs [--proxy-socket PATH] [--proxy-listen HOST:PORT]`:
 * - announces itself with a `ready` notification once it serves requests;
 * - with --proxy-socket, forwards every TCP connection to --proxy-listen (default 127.0.0.1:3128)
 *   to that unix socket: with no network namespace but loopback, this is the sandbox's only way
 *   out (HTTP_PROXY=http://127.0.0.1:3128 → the platform's outbound proxy);
 * - exits when stdin ends, killing the process groups of the commands it still runs.
 *
 * `--tar builtin` makes archive/extract use the built-in ustar implementation even when the
 * `tar` CLI is present (it is used otherwise; both read each other's archives).
 *
 * Host code may import the shared helpers exported here (line framing, error codes, tar); the
 * program itself only runs when this file is the process's entry point.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, realpathSync, type Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { pathToFileURL } from 'node:url';
import * as zlib from 'node:zlib';

// ---------------------------------------------------------------------------------------------
// Shared protocol definitions (the client in protocol.ts re-exports these)

export const PROTOCOL_VERSION = 1;
/** Largest message line either side accepts (V8 strings top out near 512 MiB). */
export const MAX_LINE_BYTES = 400 * 1024 * 1024;
/** archive() refuses directories whose tar.gz would exceed this (base64 must fit in one line). */
export const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;
export const MAX_READ_BYTES = 32 * 1024 * 1024;
export const DEFAULT_CWD = '/workspace';
export const DEFAULT_EXEC_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 100 * 1024;
export const MAX_OUTPUT_BYTES_LIMIT = 16 * 1024 * 1024;
export const DEFAULT_GREP_MAX_MATCHES = 500;
export const MAX_GLOB_RESULTS = 10_000;

/** JSON-RPC error codes: the standard ones, then the agent's (-320xx), each with a stable kind. */
export const ERROR_CODES = {
  parse_error: -32700,
  invalid_request: -32600,
  method_not_found: -32601,
  invalid_params: -32602,
  internal: -32603,
  not_found: -32001,
  is_directory: -32002,
  not_directory: -32003,
  binary_file: -32004,
  permission_denied: -32005,
  no_match: -32006,
  not_unique: -32007,
  too_large: -32008,
  exists: -32009,
  io: -32010,
  /** Client side only: no answer in time. */
  timeout: -32011,
  /** Client side only: the stream closed (sandbox exited) before the answer. */
  closed: -32012,
} as const;
export type AgentErrorKind = keyof typeof ERROR_CODES;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: { kind: AgentErrorKind; path?: string; argument?: string; errno?: string };
}

/** An error the agent answers with: carries its kind (→ code) and the path or argument it names. */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  constructor(
    readonly kind: AgentErrorKind,
    message: string,
    readonly detail: { path?: string; argument?: string; errno?: string } = {},
  ) {
    super(message);
  }
  get code(): number {
    return ERROR_CODES[this.kind];
  }
}

/**
 * Splits a byte stream into lines without quadratic concatenation (archives travel as one long
 * line). Calls `onTooLong` and drops the line when it exceeds `maxLineBytes`.
 */
export function lineSplitter(
  onLine: (line: string) => void,
  onTooLong: (bytes: number) => void = () => {},
  maxLineBytes = MAX_LINE_BYTES,
): (chunk: Buffer) => void {
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
          if (size > maxLineBytes) {
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

// ---------------------------------------------------------------------------------------------
// tar (ustar + pax long names), used when the tar CLI is missing, and by the host to read archives

export interface TarEntry {
  /** Relative path, `/`-separated, no leading `./`; directories without a trailing slash. */
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'hardlink';
  mode: number;
  mtime: number;
  data: Uint8Array;
  linkname?: string;
}

function octal(buf: Buffer, off: number, len: number, value: number): void {
  const s = Math.floor(value)
    .toString(8)
    .padStart(len - 1, '0');
  buf.write(`${s}\0`, off, len, 'ascii');
}

function cstr(buf: Buffer, off: number, len: number): string {
  const end = buf.indexOf(0, off);
  return buf.toString('utf8', off, end < 0 || end > off + len ? off + len : end);
}

function readOctal(buf: Buffer, off: number, len: number): number {
  if (buf[off]! & 0x80) {
    // base-256 (GNU) for big numbers
    let v = 0;
    for (let i = off + 1; i < off + len; i++) v = v * 256 + buf[i]!;
    return v;
  }
  const s = cstr(buf, off, len).trim();
  return s ? parseInt(s, 8) : 0;
}

function tarHeader(
  name: string,
  size: number,
  mode: number,
  mtime: number,
  flag: string,
  linkname = '',
): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  octal(h, 100, 8, mode & 0o7777);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.fill(0x20, 148, 156);
  h.write(flag, 156, 1, 'ascii');
  h.write(linkname, 157, 100, 'utf8');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += h[i]!;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len)
    len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

const pad512 = (n: number) => (512 - (n % 512)) % 512;

/** The header blocks of one entry whose data is `size` bytes (a pax header first for long names). */
function entryHeaders(e: Omit<TarEntry, 'data'>, size: number): Buffer[] {
  const out: Buffer[] = [];
  const name = e.type === 'directory' ? `${e.name}/` : e.name;
  const flag = { file: '0', directory: '5', symlink: '2', hardlink: '1' }[e.type];
  const link = e.linkname ?? '';
  if (Buffer.byteLength(name) > 100 || Buffer.byteLength(link) > 100) {
    let pax = '';
    if (Buffer.byteLength(name) > 100) pax += paxRecord('path', name);
    if (Buffer.byteLength(link) > 100) pax += paxRecord('linkpath', link);
    const body = Buffer.from(pax, 'utf8');
    out.push(
      tarHeader('././@PaxHeader', body.length, 0o644, e.mtime, 'x'),
      body,
      Buffer.alloc(pad512(body.length)),
    );
  }
  out.push(tarHeader(name.slice(0, 100), size, e.mode, e.mtime, flag, link.slice(0, 100)));
  return out;
}

/** Builds an uncompressed tar (ustar; pax records for names or link targets over 100 bytes). */
export function createTar(entries: TarEntry[]): Buffer {
  const out: Buffer[] = [];
  for (const e of entries) {
    const size = e.type === 'file' ? e.data.length : 0;
    out.push(...entryHeaders(e, size));
    if (size)
      out.push(
        Buffer.from(e.data.buffer, e.data.byteOffset, e.data.length),
        Buffer.alloc(pad512(size)),
      );
  }
  out.push(Buffer.alloc(1024));
  return Buffer.concat(out);
}

/** Reads a tar (ustar, pax and GNU long names). Entries of other types (devices, fifos) are skipped. */
export function parseTar(input: Uint8Array): TarEntry[] {
  const buf = Buffer.from(input.buffer, input.byteOffset, input.length);
  const entries: TarEntry[] = [];
  let off = 0;
  let pax: Record<string, string> = {};
  let longName: string | null = null;
  let longLink: string | null = null;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
    if (sum !== readOctal(h, 148, 8))
      throw new AgentError('invalid_params', `archive: bad tar header checksum at byte ${off}`, {
        argument: 'archive',
      });
    const size = readOctal(h, 124, 12);
    const flag = String.fromCharCode(h[156] || 0x30);
    const data = buf.subarray(off + 512, off + 512 + size);
    off += 512 + size + pad512(size);
    if (flag === 'x') {
      const text = data.toString('utf8');
      let i = 0;
      while (i < text.length) {
        const sp = text.indexOf(' ', i);
        if (sp < 0) break;
        const len = parseInt(text.slice(i, sp), 10);
        if (!len) break;
        const rec = text.slice(sp + 1, i + len - 1);
        const eq = rec.indexOf('=');
        if (eq > 0) pax[rec.slice(0, eq)] = rec.slice(eq + 1);
        i += len;
      }
      continue;
    }
    if (flag === 'g') continue;
    if (flag === 'L') {
      longName = cstr(data, 0, data.length);
      continue;
    }
    if (flag === 'K') {
      longLink = cstr(data, 0, data.length);
      continue;
    }
    const magic = h.toString('ascii', 257, 262);
    const prefix = magic === 'ustar' ? cstr(h, 345, 155) : '';
    const raw = pax.path ?? longName ?? (prefix ? `${prefix}/${cstr(h, 0, 100)}` : cstr(h, 0, 100));
    const linkname = pax.linkpath ?? longLink ?? cstr(h, 157, 100);
    pax = {};
    longName = longLink = null;
    const type =
      flag === '0' || flag === '7'
        ? 'file'
        : flag === '5'
          ? 'directory'
          : flag === '2'
            ? 'symlink'
            : flag === '1'
              ? 'hardlink'
              : null;
    if (!type) continue;
    const name = raw
      .replace(/^(\.\/)+/, '')
      .replace(/^\/+/, '')
      .replace(/\/+$/, '');
    if (!name || name === '.') continue;
    entries.push({
      name,
      type,
      mode: readOctal(h, 100, 8),
      mtime: readOctal(h, 136, 12),
      data: type === 'file' ? data : new Uint8Array(0),
      ...(type === 'symlink' || type === 'hardlink'
        ? { linkname: type === 'hardlink' ? linkname.replace(/^(\.\/)+/, '') : linkname }
        : {}),
    });
  }
  return entries;
}

export const parseTarGz = (gz: Uint8Array): TarEntry[] => parseTar(zlib.gunzipSync(gz));
export const createTarGz = (entries: TarEntry[]): Buffer => zlib.gzipSync(createTar(entries));

// ---------------------------------------------------------------------------------------------
// Glob

function segmentRegex(seg: string): RegExp {
  let re = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = seg.indexOf(']', i + 2);
      if (end < 0) {
        re += '\\[';
        continue;
      }
      let cls = seg.slice(i + 1, end);
      if (cls.startsWith('!')) cls = `^${cls.slice(1)}`;
      re += `[${cls.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else if (c === '{') {
      const end = seg.indexOf('}', i);
      if (end < 0) {
        re += '\\{';
        continue;
      }
      re += `(?:${seg
        .slice(i + 1, end)
        .split(',')
        .map((alt) => segmentRegex(alt).source.slice(1, -1))
        .join('|')})`;
      i = end;
    } else if (c === '\\' && i + 1 < seg.length) re += `\\${seg[++i]}`;
    else re += c.replace(/[.+^$()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

const hasMagic = (seg: string) => /[*?[{]/.test(seg);

/** Compiles a glob (`**`, `*`, `?`, `[…]`, `{a,b}`) into a predicate on `/`-separated relative paths. */
export function globMatcher(pattern: string): (rel: string) => boolean {
  const segs = pattern.split('/').filter((s) => s && s !== '.');
  const res = segs.map((s) => (s === '**' ? null : segmentRegex(s)));
  const match = (parts: string[], pi: number, si: number): boolean => {
    if (si === segs.length) return pi === parts.length;
    const re = res[si];
    if (re === null) {
      for (let k = pi; k <= parts.length; k++) {
        if (k > pi && parts[k - 1]!.startsWith('.')) break;
        if (match(parts, k, si + 1)) return true;
      }
      return false;
    }
    if (pi === parts.length) return false;
    const part = parts[pi]!;
    if (part.startsWith('.') && !segs[si]!.startsWith('.')) return false;
    return re!.test(part) && match(parts, pi + 1, si + 1);
  };
  return (rel) => match(rel.split('/').filter(Boolean), 0, 0);
}

/**
 * Paths matching `pattern` (absolute, or relative to `cwd`). `*`, `?` and `**` do not match
 * names starting with a dot unless the pattern segment does. Symlinked directories are not
 * followed by `**`. At most MAX_GLOB_RESULTS, sorted.
 */
export async function glob(pattern: string, cwd: string): Promise<string[]> {
  const abs = path.posix.isAbsolute(pattern) ? pattern : path.posix.join(cwd, pattern);
  const segs = abs.split('/').filter(Boolean);
  // the literal prefix is the directory the walk starts from
  let i = 0;
  while (i < segs.length - 1 && !hasMagic(segs[i]!) && segs[i] !== '**') i++;
  const base = `/${segs.slice(0, i).join('/')}`;
  const rest = segs.slice(i);
  const out = new Set<string>();
  let visited = 0;
  const walk = async (dir: string, si: number): Promise<void> => {
    if (out.size >= MAX_GLOB_RESULTS || ++visited > 200_000) return;
    if (si === rest.length) {
      out.add(dir);
      return;
    }
    const seg = rest[si]!;
    if (seg === '**') {
      await walk(dir, si + 1);
      for (const d of await readDirSafe(dir)) {
        if (d.name.startsWith('.')) continue;
        const p = path.posix.join(dir, d.name);
        if (d.isDirectory()) await walk(p, si);
        else if (si + 1 === rest.length) out.add(p); // a trailing `**` matches files too
      }
      return;
    }
    if (!hasMagic(seg)) {
      const p = path.posix.join(dir, seg);
      try {
        await fsp.lstat(p);
        await walk(p, si + 1);
      } catch {
        /* absent */
      }
      return;
    }
    const re = segmentRegex(seg);
    for (const d of await readDirSafe(dir)) {
      if (d.name.startsWith('.') && !seg.startsWith('.')) continue;
      if (!re.test(d.name)) continue;
      const p = path.posix.join(dir, d.name);
      if (si + 1 === rest.length) out.add(p);
      else if (d.isDirectory() || d.isSymbolicLink()) await walk(p, si + 1);
    }
  };
  await walk(base, 0);
  return [...out].sort().slice(0, MAX_GLOB_RESULTS);
}

async function readDirSafe(dir: string) {
  try {
    return (await fsp.readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    );
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------
// Operations

function fsError(err: unknown, op: string, p: string): AgentError {
  const e = err as NodeJS.ErrnoException;
  if (e instanceof AgentError) return e;
  const errno = e?.code;
  const map: Record<string, [AgentErrorKind, string]> = {
    ENOENT: ['not_found', 'no such file or directory'],
    EISDIR: ['is_directory', 'is a directory'],
    ENOTDIR: ['not_directory', 'a component of the path is not a directory'],
    EACCES: ['permission_denied', 'permission denied'],
    EPERM: ['permission_denied', 'operation not permitted'],
    EROFS: ['permission_denied', 'read-only file system'],
    EEXIST: ['exists', 'already exists'],
    EFBIG: ['too_large', 'file too large'],
    ENOSPC: ['io', 'no space left on device'],
  };
  const [kind, text] = (errno && map[errno]) || ['io', e?.message ?? String(err)];
  return new AgentError(kind, `${op}: ${p}: ${text}`, { path: p, ...(errno ? { errno } : {}) });
}

type Params = Record<string, unknown>;

function str(p: Params, key: string, method: string, optional: true): string | undefined;
function str(p: Params, key: string, method: string, optional?: false): string;
function str(p: Params, key: string, method: string, optional = false): string | undefined {
  const v = p[key];
  if (v === undefined || v === null) {
    if (optional) return undefined;
    throw new AgentError('invalid_params', `${method}: '${key}' is required`, { argument: key });
  }
  if (typeof v !== 'string')
    throw new AgentError('invalid_params', `${method}: '${key}' must be a string`, {
      argument: key,
    });
  return v;
}

function num(
  p: Params,
  key: string,
  method: string,
  def: number,
  min: number,
  max: number,
): number {
  const v = p[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new AgentError(
      'invalid_params',
      `${method}: '${key}' must be a number between ${min} and ${max}`,
      { argument: key },
    );
  }
  return Math.floor(v);
}

function absPath(p: Params, key: string, method: string, def?: string): string {
  const v = def === undefined ? str(p, key, method) : (str(p, key, method, true) ?? def);
  if (!v)
    throw new AgentError('invalid_params', `${method}: '${key}' must not be empty`, {
      argument: key,
    });
  if (v.includes('\0'))
    throw new AgentError('invalid_params', `${method}: '${key}' contains a NUL byte`, {
      argument: key,
    });
  return path.posix.resolve(DEFAULT_CWD, v);
}

const isBinary = (buf: Buffer) => buf.indexOf(0) !== -1;

function capture(stream: Readable, max: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const done = new Promise<void>((resolve) => {
    stream.on('data', (c: Buffer) => {
      if (size >= max) {
        truncated = true;
        return;
      }
      if (size + c.length > max) truncated = true;
      const take = c.subarray(0, max - size);
      chunks.push(take);
      size += take.length;
    });
    stream.once('close', resolve);
    stream.once('end', resolve);
    stream.once('error', () => resolve());
  });
  return {
    done,
    get truncated() {
      return truncated;
    },
    text: () => new StringDecoder('utf8').write(Buffer.concat(chunks, size)),
  };
}

const running = new Set<ChildProcess>();

function killGroup(child: ChildProcess): void {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}

async function execCommand(p: Params) {
  const command = str(p, 'command', 'exec');
  const cwd = absPath(p, 'cwd', 'exec', DEFAULT_CWD);
  const timeoutMs = num(p, 'timeoutMs', 'exec', DEFAULT_EXEC_TIMEOUT_MS, 1, 24 * 3600_000);
  const max = num(p, 'maxOutputBytes', 'exec', DEFAULT_MAX_OUTPUT_BYTES, 0, MAX_OUTPUT_BYTES_LIMIT);
  const stdin = str(p, 'stdin', 'exec', true);
  const env: Record<string, string> = {};
  if (p.env !== undefined && p.env !== null) {
    if (typeof p.env !== 'object' || Array.isArray(p.env))
      throw new AgentError('invalid_params', "exec: 'env' must be an object of strings", {
        argument: 'env',
      });
    for (const [k, v] of Object.entries(p.env as Params)) {
      if (typeof v !== 'string' || !k || k.includes('=') || k.includes('\0'))
        throw new AgentError('invalid_params', `exec: env.${k} must be a string`, {
          argument: `env.${k}`,
        });
      env[k] = v;
    }
  }
  let st: Stats;
  try {
    st = await fsp.stat(cwd);
  } catch (err) {
    throw fsError(err, 'exec: cwd', cwd);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `exec: cwd ${cwd} is not a directory`, {
      path: cwd,
      argument: 'cwd',
    });

  const started = Date.now();
  const child = spawn('/bin/sh', ['-c', command], {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  const out = capture(child.stdout!, max);
  const err = capture(child.stderr!, max);
  child.stdin!.on('error', () => {});
  child.stdin!.end(stdin ?? '');
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child);
  }, timeoutMs);
  try {
    const { code, signal } = await new Promise<{
      code: number | null;
      signal: NodeJS.Signals | null;
    }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
    });
    // Background processes may still hold the pipes: wait a moment for the output, then let go.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([out.done, err.done]),
      new Promise<void>((r) => {
        grace = setTimeout(r, 150);
      }),
    ]);
    clearTimeout(grace);
    child.stdout!.destroy();
    child.stderr!.destroy();
    return {
      exitCode: code,
      signal,
      stdout: out.text(),
      stderr: err.text(),
      timedOut,
      truncated: out.truncated || err.truncated,
      durationMs: Date.now() - started,
    };
  } finally {
    clearTimeout(timer);
    running.delete(child);
  }
}

async function readTextFile(p: string, op: string): Promise<string> {
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

async function readFileOp(p: Params) {
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

async function writeFileOp(p: Params) {
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

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

async function editOp(p: Params) {
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

async function globOp(p: Params) {
  const pattern = str(p, 'pattern', 'glob');
  if (!pattern)
    throw new AgentError('invalid_params', "glob: 'pattern' must not be empty", {
      argument: 'pattern',
    });
  const cwd = absPath(p, 'cwd', 'glob', DEFAULT_CWD);
  return glob(pattern, cwd);
}

function compileRegex(pattern: string, method: string): RegExp {
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

const GREP_SKIP_DIRS = new Set(['.git', 'node_modules']);
const GREP_MAX_FILE_BYTES = 8 * 1024 * 1024;

async function grepOp(p: Params) {
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

async function listOp(p: Params) {
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

// tar CLI or built-in

let forceBuiltinTar = false;

function findTar(): string | null {
  if (forceBuiltinTar) return null;
  for (const dir of (process.env.PATH || '/usr/bin:/bin').split(':')) {
    const p = path.posix.join(dir || '.', 'tar');
    try {
      accessSync(p, fsConstants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

let tarPath: string | null | undefined;
const tarCli = () => (tarPath === undefined ? (tarPath = findTar()) : tarPath);

function runTar(
  args: string[],
  input: Buffer | null,
  maxOut: number,
  op: string,
  dir: string,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(tarCli()!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxOut) {
        if (!over) {
          over = true;
          child.kill('SIGKILL');
        }
        return;
      }
      chunks.push(c);
    });
    child.stderr!.on('data', (c: Buffer) => {
      if (stderr.length < 4000) stderr += c.toString('utf8');
    });
    child.stdin!.on('error', () => {});
    child.stdin!.end(input ?? undefined);
    child.once('error', (err) => reject(fsError(err, op, dir)));
    child.once('close', (code) => {
      if (over)
        return reject(
          new AgentError('too_large', `${op}: ${dir}: the archive exceeds ${maxOut} bytes`, {
            path: dir,
          }),
        );
      if (code !== 0)
        return reject(
          new AgentError(
            'io',
            `${op}: ${dir}: tar exited with ${code}: ${stderr.trim().slice(0, 1000)}`,
            { path: dir },
          ),
        );
      resolve(Buffer.concat(chunks));
    });
  });
}

async function collectEntries(root: string): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  let total = 0;
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const d of await fsp.readdir(dir, { withFileTypes: true })) {
      const full = path.posix.join(dir, d.name);
      const name = rel ? `${rel}/${d.name}` : d.name;
      let st: Stats;
      try {
        st = await fsp.lstat(full);
      } catch {
        continue;
      }
      const mtime = Math.floor(st.mtimeMs / 1000);
      if (st.isDirectory()) {
        entries.push({
          name,
          type: 'directory',
          mode: st.mode & 0o7777,
          mtime,
          data: new Uint8Array(0),
        });
        await walk(full, name);
      } else if (st.isSymbolicLink()) {
        entries.push({
          name,
          type: 'symlink',
          mode: 0o777,
          mtime,
          data: new Uint8Array(0),
          linkname: await fsp.readlink(full),
        });
      } else if (st.isFile()) {
        let data: Buffer;
        try {
          data = await fsp.readFile(full);
        } catch {
          continue; // unreadable: skipped, like tar --ignore-failed-read
        }
        total += data.length;
        if (total > MAX_ARCHIVE_BYTES)
          throw new AgentError('too_large', `archive: ${root}: over ${MAX_ARCHIVE_BYTES} bytes`, {
            path: root,
          });
        entries.push({ name, type: 'file', mode: st.mode & 0o7777, mtime, data });
      }
    }
  };
  await walk(root, '');
  return entries;
}

function safeRelative(name: string): string | null {
  const parts = name.split('/').filter((s) => s && s !== '.');
  if (!parts.length || parts.includes('..')) return null;
  return parts.join('/');
}

async function extractEntries(dir: string, entries: TarEntry[]): Promise<void> {
  const root = await fsp.realpath(dir);
  const inside = async (p: string) => {
    const real = await fsp.realpath(p).catch(() => null);
    return real !== null && (real === root || real.startsWith(`${root}/`));
  };
  const dirModes: Array<[string, number]> = [];
  for (const e of entries) {
    const rel = safeRelative(e.name);
    if (!rel) continue;
    const dest = path.posix.join(root, rel);
    const parent = path.posix.dirname(dest);
    await fsp.mkdir(parent, { recursive: true });
    if (!(await inside(parent))) continue; // a symlink in the archive pointing out of `dir`
    if (e.type === 'directory') {
      await fsp.mkdir(dest, { recursive: true });
      dirModes.push([dest, e.mode || 0o755]);
      continue;
    }
    await fsp.rm(dest, { force: true }).catch(() => {});
    if (e.type === 'symlink') await fsp.symlink(e.linkname ?? '', dest);
    else if (e.type === 'hardlink') {
      const target = safeRelative(e.linkname ?? '');
      if (target) await fsp.link(path.posix.join(root, target), dest).catch(() => {});
    } else {
      await fsp.writeFile(dest, e.data, { mode: e.mode || 0o644 });
      await fsp.chmod(dest, e.mode || 0o644);
      if (e.mtime) await fsp.utimes(dest, e.mtime, e.mtime).catch(() => {});
    }
  }
  for (const [d, mode] of dirModes.reverse()) await fsp.chmod(d, mode | 0o700).catch(() => {});
}

async function archiveOp(p: Params) {
  const dir = absPath(p, 'dir', 'archive');
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch (err) {
    throw fsError(err, 'archive', dir);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `archive: ${dir} is not a directory`, { path: dir });
  let gz: Buffer;
  if (tarCli()) {
    gz = await runTar(
      ['-czf', '-', '--numeric-owner', '--ignore-failed-read', '-C', dir, '.'],
      null,
      MAX_ARCHIVE_BYTES,
      'archive',
      dir,
    );
  } else {
    gz = zlib.gzipSync(createTar(await collectEntries(dir)));
    if (gz.length > MAX_ARCHIVE_BYTES)
      throw new AgentError(
        'too_large',
        `archive: ${dir}: the archive exceeds ${MAX_ARCHIVE_BYTES} bytes`,
        { path: dir },
      );
  }
  return { base64: gz.toString('base64'), bytes: gz.length };
}

async function extractOp(p: Params) {
  const dir = absPath(p, 'dir', 'extract');
  const b64 = str(p, 'base64', 'extract');
  const data = Buffer.from(b64, 'base64');
  try {
    await fsp.mkdir(dir, { recursive: true });
  } catch (err) {
    throw fsError(err, 'extract', dir);
  }
  if (tarCli()) {
    await runTar(['-xzf', '-', '--no-same-owner', '-C', dir], data, 0, 'extract', dir);
  } else {
    let tar: Buffer;
    try {
      tar = zlib.gunzipSync(data);
    } catch (err) {
      throw new AgentError(
        'invalid_params',
        `extract: ${dir}: the archive is not gzip data (${(err as Error).message})`,
        { path: dir, argument: 'archive' },
      );
    }
    try {
      await extractEntries(dir, parseTar(tar));
    } catch (err) {
      throw fsError(err, 'extract', dir);
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Streamed transfers: archives travel in chunks of at most STREAM_CHUNK_BYTES, so neither side
// ever holds a whole archive (the host parses and stores them as they come).
//
//   archiveOpen  { dir, maxFileBytes?, unchanged? }  → { stream, skipped: [{ name, size, reason }] }
//   extractOpen  { dir }                 → { stream }
//   streamRead   { stream }              → { base64, eof }      (archive streams)
//   streamWrite  { stream, base64 }      → null                 (extract streams)
//   streamEnd    { stream }              → null                 (extract: waits for the unpacking)
//   streamClose  { stream }              → null                 (either: abandons it)
//
// With maxFileBytes, regular files larger than that are left out of the archive before anything
// is read (a sparse 1 GiB file costs nothing) and listed in `skipped` with reason 'too_large'.
// `unchanged` ({ relative name: 'size:mtime seconds' }) leaves out files the host already has.
// A stream untouched for STREAM_IDLE_MS is closed; at most MAX_OPEN_STREAMS are open at once.

export const STREAM_CHUNK_BYTES = 1024 * 1024;
const STREAM_IDLE_MS = 5 * 60_000;
const MAX_OPEN_STREAMS = 8;
/** Largest number of entries a filtered archive lists (the file list is held in memory). */
const MAX_WALK_ENTRIES = 200_000;

interface OpenStream {
  id: string;
  op: 'archive' | 'extract';
  dir: string;
  /** archive: the tar.gz bytes. */
  readable?: Readable;
  /** extract: where the tar.gz bytes go. */
  writable?: Writable;
  child?: ChildProcess;
  stderr: string;
  /** Resolves once the producer/consumer finished (rejects with its error). */
  done: Promise<void>;
  timer: NodeJS.Timeout | null;
}

const openStreams = new Map<string, OpenStream>();
let streamSeq = 0;

function touch(s: OpenStream): void {
  if (s.timer) clearTimeout(s.timer);
  s.timer = setTimeout(() => closeStream(s), STREAM_IDLE_MS);
  s.timer.unref?.();
}

function closeStream(s: OpenStream): void {
  if (s.timer) clearTimeout(s.timer);
  openStreams.delete(s.id);
  if (s.child) {
    running.delete(s.child);
    killGroup(s.child);
  }
  s.readable?.destroy();
  s.writable?.destroy();
  s.done.catch(() => {});
}

function registerStream(s: Omit<OpenStream, 'id' | 'timer'>): OpenStream {
  const full: OpenStream = { ...s, id: `st${++streamSeq}`, timer: null };
  openStreams.set(full.id, full);
  touch(full);
  return full;
}

function streamOf(p: Params, method: string, op: OpenStream['op']): OpenStream {
  const id = str(p, 'stream', method);
  const s = openStreams.get(id);
  if (!s || s.op !== op)
    throw new AgentError('not_found', `${method}: no open ${op} stream '${id}'`, {
      argument: 'stream',
    });
  touch(s);
  return s;
}

function checkStreamRoom(method: string): void {
  if (openStreams.size >= MAX_OPEN_STREAMS)
    throw new AgentError('too_large', `${method}: ${MAX_OPEN_STREAMS} streams are open already`, {
      argument: 'stream',
    });
}

/** Spawns tar in its own process group; `done` resolves when it exits with an accepted code. */
function spawnTar(
  args: string[],
  op: string,
  dir: string,
  okCodes: number[],
): { child: ChildProcess; done: Promise<void>; stderr: () => string } {
  const child = spawn(tarCli()!, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    if (stderr.length < 4000) stderr += c.toString('utf8');
  });
  child.stdin!.on('error', () => {});
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', (err) => reject(fsError(err, op, dir)));
    child.once('close', (code) => {
      running.delete(child);
      if (code !== null && okCodes.includes(code)) resolve();
      else
        reject(
          new AgentError(
            'io',
            `${op}: ${dir}: tar exited with ${code}: ${stderr.trim().slice(0, 1000)}`,
            { path: dir },
          ),
        );
    });
  });
  done.catch(() => {});
  return { child, done, stderr: () => stderr };
}

interface WalkItem {
  rel: string;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  mode: number;
  mtime: number;
  linkname?: string;
}

/** Everything under `root` (lstat: symlinks are not followed), files over `maxFileBytes` left out. */
async function walkForArchive(
  root: string,
  maxFileBytes: number,
  skipped: Array<{ name: string; size: number; reason: 'too_large' }>,
  unchanged: Map<string, string> = new Map(),
): Promise<WalkItem[]> {
  const items: WalkItem[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const d of await readDirSafe(dir)) {
      if (items.length >= MAX_WALK_ENTRIES)
        throw new AgentError(
          'too_large',
          `archive: ${root}: more than ${MAX_WALK_ENTRIES} entries`,
          { path: root },
        );
      const full = path.posix.join(dir, d.name);
      const name = rel ? `${rel}/${d.name}` : d.name;
      let st: Stats;
      try {
        st = await fsp.lstat(full);
      } catch {
        continue;
      }
      const mtime = Math.floor(st.mtimeMs / 1000);
      if (st.isDirectory()) {
        items.push({ rel: name, type: 'directory', size: 0, mode: st.mode & 0o7777, mtime });
        await walk(full, name);
      } else if (st.isSymbolicLink()) {
        let linkname = '';
        try {
          linkname = await fsp.readlink(full);
        } catch {
          continue;
        }
        items.push({ rel: name, type: 'symlink', size: 0, mode: 0o777, mtime, linkname });
      } else if (st.isFile()) {
        if (st.size > maxFileBytes) skipped.push({ name, size: st.size, reason: 'too_large' });
        else if (unchanged.get(name) === `${st.size}:${mtime}`)
          continue; // the host has this version
        else items.push({ rel: name, type: 'file', size: st.size, mode: st.mode & 0o7777, mtime });
      }
    }
  };
  await walk(root, '');
  return items;
}

/** The built-in tar writer over a walk: each file read in chunks, exactly its listed size. */
async function* builtinTar(root: string, items: WalkItem[]): AsyncGenerator<Buffer> {
  for (const it of items) {
    const entry = {
      name: it.rel,
      type: it.type,
      mode: it.mode,
      mtime: it.mtime,
      ...(it.linkname !== undefined ? { linkname: it.linkname } : {}),
    };
    if (it.type !== 'file') {
      yield Buffer.concat(entryHeaders(entry, 0));
      continue;
    }
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(path.posix.join(root, it.rel), 'r');
    } catch {
      continue; // unreadable: skipped, like tar --ignore-failed-read
    }
    try {
      yield Buffer.concat(entryHeaders(entry, it.size));
      let left = it.size;
      while (left > 0) {
        const buf = Buffer.alloc(Math.min(left, STREAM_CHUNK_BYTES));
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        // a file that shrank meanwhile is padded with zeros: the header's size is what counts
        if (bytesRead === 0) buf.fill(0);
        const n = bytesRead || buf.length;
        yield buf.subarray(0, n);
        left -= n;
      }
      const pad = pad512(it.size);
      if (pad) yield Buffer.alloc(pad);
    } finally {
      await fh.close();
    }
  }
  yield Buffer.alloc(1024);
}

async function archiveOpenOp(p: Params) {
  checkStreamRoom('archiveOpen');
  const dir = absPath(p, 'dir', 'archiveOpen');
  const maxFileBytes = num(
    p,
    'maxFileBytes',
    'archiveOpen',
    Number.MAX_SAFE_INTEGER,
    0,
    Number.MAX_SAFE_INTEGER,
  );
  const unchanged = new Map<string, string>();
  if (p.unchanged !== undefined && p.unchanged !== null) {
    if (typeof p.unchanged !== 'object' || Array.isArray(p.unchanged))
      throw new AgentError(
        'invalid_params',
        "archiveOpen: 'unchanged' must be an object of name → 'size:mtime'",
        { argument: 'unchanged' },
      );
    for (const [k, v] of Object.entries(p.unchanged as Params))
      if (typeof v === 'string') unchanged.set(k, v);
  }
  const filtered = (p.maxFileBytes !== undefined && p.maxFileBytes !== null) || unchanged.size > 0;
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch (err) {
    throw fsError(err, 'archive', dir);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `archive: ${dir} is not a directory`, { path: dir });
  const skipped: Array<{ name: string; size: number; reason: 'too_large' }> = [];
  const items =
    filtered || !tarCli() ? await walkForArchive(dir, maxFileBytes, skipped, unchanged) : null;
  let s: OpenStream;
  if (tarCli()) {
    // exit code 1: a file changed while it was read; the archive is still whole
    const base = ['-czf', '-', '--numeric-owner', '--ignore-failed-read', '-C', dir];
    const t = spawnTar(
      items ? [...base, '--null', '--no-recursion', '-T', '-'] : [...base, '.'],
      'archive',
      dir,
      [0, 1],
    );
    if (items) t.child.stdin!.end(Buffer.from(items.map((i) => `./${i.rel}\0`).join(''), 'utf8'));
    else t.child.stdin!.end();
    // piped at once: a child that exits before the first streamRead would otherwise have its
    // unread output discarded (child_process resumes stdio nobody listens to)
    const out = new PassThrough({ highWaterMark: STREAM_CHUNK_BYTES });
    t.child.stdout!.pipe(out);
    s = registerStream({
      op: 'archive',
      dir,
      readable: out,
      child: t.child,
      stderr: '',
      done: t.done,
    });
  } else {
    const gz = zlib.createGzip();
    const source = Readable.from(builtinTar(dir, items!));
    const done = pipeline(source, gz).catch((err) => {
      throw fsError(err, 'archive', dir);
    });
    done.catch(() => {});
    s = registerStream({ op: 'archive', dir, readable: gz, stderr: '', done });
  }
  return { stream: s.id, skipped };
}

/** Up to `max` bytes from a paused readable; `eof` once it has ended. */
function readUpTo(r: Readable, max: number): Promise<{ data: Buffer; eof: boolean }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      r.off('readable', onReadable);
      r.off('end', onEnd);
      r.off('error', onError);
      r.off('close', onEnd);
    };
    const finish = (eof: boolean) => {
      cleanup();
      resolve({ data: Buffer.concat(parts, size), eof });
    };
    function onReadable() {
      let c: Buffer | null;
      while (size < max && (c = r.read() as Buffer | null) !== null) {
        if (size + c.length > max) {
          const keep = max - size;
          parts.push(c.subarray(0, keep));
          r.unshift(c.subarray(keep));
          size = max;
          break;
        }
        parts.push(c);
        size += c.length;
      }
      if (size >= max) finish(false);
    }
    function onEnd() {
      finish(true);
    }
    function onError(err: Error) {
      cleanup();
      reject(err);
    }
    if (r.readableEnded || r.destroyed) return finish(true);
    r.on('readable', onReadable);
    r.once('end', onEnd);
    r.once('close', onEnd);
    r.once('error', onError);
    onReadable();
  });
}

async function streamReadOp(p: Params) {
  const s = streamOf(p, 'streamRead', 'archive');
  let chunk: { data: Buffer; eof: boolean };
  try {
    chunk = await readUpTo(s.readable!, STREAM_CHUNK_BYTES);
    if (chunk.eof) await s.done; // the producer's verdict: a failed tar is an error, not a short archive
  } catch (err) {
    closeStream(s);
    throw fsError(err, 'archive', s.dir);
  }
  if (chunk.eof) closeStream(s);
  return { base64: chunk.data.toString('base64'), eof: chunk.eof };
}

async function extractOpenOp(p: Params) {
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

async function streamWriteOp(p: Params) {
  const s = streamOf(p, 'streamWrite', 'extract');
  const data = Buffer.from(str(p, 'base64', 'streamWrite'), 'base64');
  const w = s.writable!;
  try {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      w.once('error', onError);
      const ok = w.write(data, (err) => {
        if (err) reject(err);
      });
      const settle = () => {
        w.off('error', onError);
        resolve();
      };
      if (ok) settle();
      else w.once('drain', settle);
    });
  } catch (err) {
    const reason = await s.done.then(
      () => err,
      (e: unknown) => e,
    );
    closeStream(s);
    throw fsError(reason, 'extract', s.dir);
  }
  return null;
}

async function streamEndOp(p: Params) {
  const s = streamOf(p, 'streamEnd', 'extract');
  s.writable!.end();
  try {
    await s.done;
  } catch (err) {
    throw fsError(err, 'extract', s.dir);
  } finally {
    closeStream(s);
  }
  return null;
}

async function streamCloseOp(p: Params) {
  const id = str(p, 'stream', 'streamClose');
  const s = openStreams.get(id);
  if (s) closeStream(s);
  return null;
}

export type Handler = (params: Params) => Promise<unknown>;

export function createHandlers(): Record<string, Handler> {
  return {
    ping: async () => null,
    exec: execCommand,
    readFile: readFileOp,
    writeFile: writeFileOp,
    edit: editOp,
    glob: globOp,
    grep: grepOp,
    archive: archiveOp,
    extract: extractOp,
    list: listOp,
    archiveOpen: archiveOpenOp,
    extractOpen: extractOpenOp,
    streamRead: streamReadOp,
    streamWrite: streamWriteOp,
    streamEnd: streamEndOp,
    streamClose: streamCloseOp,
  };
}

export function toRpcError(err: unknown): RpcErrorObject {
  if (err instanceof AgentError) {
    return { code: err.code, message: err.message, data: { kind: err.kind, ...err.detail } };
  }
  const e = err as Error;
  return {
    code: ERROR_CODES.internal,
    message: e?.message ?? String(err),
    data: { kind: 'internal' },
  };
}

/** Serves JSON-RPC lines from `input`, answers on `output`; calls `onEnd` when the input ends. */
export function serve(
  input: Readable,
  output: Writable,
  handlers: Record<string, Handler>,
  onEnd: () => void,
): void {
  const send = (msg: unknown) => output.write(`${JSON.stringify(msg)}\n`);
  const onLine = (line: string) => {
    let msg: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
    try {
      msg = JSON.parse(line);
    } catch {
      send({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: ERROR_CODES.parse_error,
          message: 'parse error: the line is not JSON',
          data: { kind: 'parse_error' },
        },
      });
      return;
    }
    const id = msg && (typeof msg.id === 'number' || typeof msg.id === 'string') ? msg.id : null;
    if (
      !msg ||
      typeof msg !== 'object' ||
      msg.jsonrpc !== '2.0' ||
      typeof msg.method !== 'string'
    ) {
      send({
        jsonrpc: '2.0',
        id,
        error: {
          code: ERROR_CODES.invalid_request,
          message: 'invalid request: expected a JSON-RPC 2.0 request',
          data: { kind: 'invalid_request' },
        },
      });
      return;
    }
    if (id === null) return; // notifications: nothing to answer
    const handler = Object.prototype.hasOwnProperty.call(handlers, msg.method)
      ? handlers[msg.method]
      : undefined;
    if (!handler) {
      send({
        jsonrpc: '2.0',
        id,
        error: {
          code: ERROR_CODES.method_not_found,
          message: `method not found: ${msg.method}`,
          data: { kind: 'method_not_found', argument: 'method' },
        },
      });
      return;
    }
    const params =
      msg.params && typeof msg.params === 'object' && !Array.isArray(msg.params)
        ? (msg.params as Params)
        : {};
    Promise.resolve()
      .then(() => handler(params))
      .then(
        (result) => send({ jsonrpc: '2.0', id, result: result ?? null }),
        (err) => send({ jsonrpc: '2.0', id, error: toRpcError(err) }),
      );
  };
  const split = lineSplitter(onLine, (bytes) => {
    send({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: ERROR_CODES.invalid_request,
        message: `request line over ${MAX_LINE_BYTES} bytes (${bytes}) dropped`,
        data: { kind: 'too_large' },
      },
    });
  });
  input.on('data', (c: Buffer) => split(c));
  input.once('end', onEnd);
  input.once('close', onEnd);
}

// ---------------------------------------------------------------------------------------------
// Outbound: TCP on the sandbox's loopback → the platform proxy's unix socket

export function startProxyForwarder(
  listen: { host: string; port: number },
  socketPath: string,
): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(socketPath);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Program

function parseArgs(argv: string[]): {
  proxySocket: string | null;
  proxyListen: { host: string; port: number };
} {
  let proxySocket: string | null = null;
  let listen = '127.0.0.1:3128';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--proxy-socket') proxySocket = argv[++i] ?? null;
    else if (argv[i] === '--proxy-listen') listen = argv[++i] ?? listen;
    else if (argv[i] === '--tar') forceBuiltinTar = argv[++i] === 'builtin';
  }
  const idx = listen.lastIndexOf(':');
  return {
    proxySocket,
    proxyListen: {
      host: listen.slice(0, idx) || '127.0.0.1',
      port: Number(listen.slice(idx + 1)) || 3128,
    },
  };
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const args = parseArgs(argv);
  let stopping = false;
  const shutdown = (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const child of running) killGroup(child);
    process.exit(code);
  };
  process.on('SIGTERM', () => shutdown(143));
  process.on('SIGINT', () => shutdown(130));
  process.stdout.on('error', () => shutdown(0)); // EPIPE: the host went away
  if (args.proxySocket) {
    try {
      await startProxyForwarder(args.proxyListen, args.proxySocket);
    } catch (err) {
      process.stderr.write(
        `agent: proxy forwarder on ${args.proxyListen.host}:${args.proxyListen.port} failed: ${(err as Error).message}\n`,
      );
    }
  }
  serve(process.stdin, process.stdout, createHandlers(), () => shutdown(0));
  process.stdout.write(
    `${JSON.stringify({ jsonrpc: '2.0', method: 'ready', params: { protocol: PROTOCOL_VERSION, pid: process.pid, node: process.version, tar: tarCli() ? 'cli' : 'builtin' } })}\n`,
  );
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return (
      import.meta.url === pathToFileURL(realpathSync(entry)).href ||
      import.meta.url === pathToFileURL(entry).href
    );
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main().catch((err) => {
    process.stderr.write(`agent: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
