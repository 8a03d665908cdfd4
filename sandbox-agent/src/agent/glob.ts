/**
 * Glob patterns (`*`, `**`, `?`, `[...]`, `{a,b}`) matched against relative paths, and the walk
 * that lists the files of a directory matching one (the agent's `glob` and `grep --glob`).
 */
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { AgentError, MAX_GLOB_RESULTS } from '../protocol.js';

export function segmentRegex(seg: string): RegExp {
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

export const hasMagic = (seg: string) => /[*?[{]/.test(seg);

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

export async function readDirSafe(dir: string) {
  try {
    return (await fsp.readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    );
  } catch {
    return [];
  }
}
