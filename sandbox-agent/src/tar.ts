/**
 * tar (ustar + pax long names) in memory: used by the agent when the tar CLI is missing, and by
 * the host to read and write archives. Round trips proved by core/test/sandbox.local.test.ts and
 * core/test/sandbox.outputs.test.ts.
 */
import * as zlib from 'node:zlib';
import { AgentError } from './protocol.js';

export interface TarEntry {
  /** Relative path, `/`-separated, no leading `./`; directories without a trailing slash. */
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'hardlink';
  mode: number;
  mtime: number;
  data: Uint8Array;
  linkname?: string;
}

export function octal(buf: Buffer, off: number, len: number, value: number): void {
  const s = Math.floor(value)
    .toString(8)
    .padStart(len - 1, '0');
  buf.write(`${s}\0`, off, len, 'ascii');
}

export function cstr(buf: Buffer, off: number, len: number): string {
  const end = buf.indexOf(0, off);
  return buf.toString('utf8', off, end < 0 || end > off + len ? off + len : end);
}

export function readOctal(buf: Buffer, off: number, len: number): number {
  if (buf[off]! & 0x80) {
    // base-256 (GNU) for big numbers
    let v = 0;
    for (let i = off + 1; i < off + len; i++) v = v * 256 + buf[i]!;
    return v;
  }
  const s = cstr(buf, off, len).trim();
  return s ? parseInt(s, 8) : 0;
}

export function tarHeader(
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

export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len)
    len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

export const pad512 = (n: number) => (512 - (n % 512)) % 512;

/** The header blocks of one entry whose data is `size` bytes (a pax header first for long names). */
export function entryHeaders(e: Omit<TarEntry, 'data'>, size: number): Buffer[] {
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
