/**
 * Helpers of the secrets-scan test (test/e2e/credentials/secrets-scan.test.ts): a recording `fetch` that keeps
 * every HTTP response the test receives (status, headers and the body bytes as the consumer
 * reads them, so SSE streams are recorded too), the encodings a secret can leak in, and a
 * binary-safe recursive scan of a directory (gzip members are also searched decompressed, so
 * a secret inside a sandbox snapshot `.tar.gz` is found).
 *
 * `watchProcesses` + `sandboxProcesses` sample, from the host's /proc, the cmdline and environ
 * of every sandbox process: each bwrap the platform (or the Nomad fake) starts, the sandbox
 * agent and everything under them.
 *
 * A finding names the secret and where it was found, never the secret's value.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';

export interface Secret {
  name: string;
  value: string;
  /** Places (labels) where this secret may legitimately appear, e.g. the response that hands out a new key once. */
  allowedIn?: (label: string) => boolean;
}

export interface Finding {
  secret: string;
  form: string;
  where: string;
}

/**
 * The byte patterns of a secret: as is, URL-encoded, and base64/base64url at each of the three
 * byte alignments (so it is found inside a longer base64 string, e.g. a Basic auth header).
 */
export function secretForms(value: string): Array<{ form: string; bytes: Buffer }> {
  const raw = Buffer.from(value, 'utf8');
  const forms = new Map<string, string>([['plain', value]]);
  if (encodeURIComponent(value) !== value) forms.set('url-encoded', encodeURIComponent(value));
  for (let k = 0; k < 3; k++) {
    const padded = Buffer.concat([Buffer.alloc(k), raw]);
    const from = Math.ceil((8 * k) / 6);
    const to = Math.floor((8 * (k + raw.length)) / 6);
    forms.set(`base64@${k}`, padded.toString('base64').slice(from, to));
    forms.set(`base64url@${k}`, padded.toString('base64url').slice(from, to));
  }
  const seen = new Set<string>();
  const out: Array<{ form: string; bytes: Buffer }> = [];
  for (const [form, s] of forms) {
    if (seen.has(s) || s.length < 12) continue;
    seen.add(s);
    out.push({ form, bytes: Buffer.from(s, 'utf8') });
  }
  return out;
}

/** Every secret (in any of its forms) found in `data`, labelled `where`, unless allowed there. */
export function findSecrets(
  secrets: readonly Secret[],
  data: Buffer | string,
  where: string,
): Finding[] {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const found: Finding[] = [];
  for (const s of secrets) {
    if (s.allowedIn?.(where)) continue;
    for (const f of secretForms(s.value)) {
      if (buf.indexOf(f.bytes) >= 0) {
        found.push({ secret: s.name, form: f.form, where });
        break;
      }
    }
  }
  return found;
}

export interface RecordedResponse {
  label: string;
  method: string;
  url: string;
  status: number;
  headers: string;
  body: () => Buffer;
}

/**
 * A `fetch` that records every response: the body is tapped as the consumer reads it (an SSE
 * stream is recorded up to where the consumer stopped). Labels are `METHOD path #n`.
 */
export function recordingFetch(): { fetch: typeof fetch; responses: RecordedResponse[] } {
  const responses: RecordedResponse[] = [];
  const wrapped = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const res = await fetch(req);
    const chunks: Buffer[] = [];
    const url = new URL(req.url);
    const rec: RecordedResponse = {
      label: `${req.method} ${url.pathname}${url.search} #${responses.length + 1}`,
      method: req.method,
      url: req.url,
      status: res.status,
      headers: [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n'),
      body: () => Buffer.concat(chunks),
    };
    responses.push(rec);
    if (!res.body) return res;
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        chunks.push(Buffer.from(chunk));
        controller.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(tap), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
  return { fetch: wrapped as typeof fetch, responses };
}

export interface ScannedFile {
  path: string;
  bytes: Buffer;
}

const MAX_GUNZIP_BYTES = 512 * 1024 * 1024;

/**
 * Every regular file under `root` (symlinks are not followed), plus the decompressed content of
 * each gzip file as `<path>!gunzip`. Paths are relative to `root`.
 */
export function readTree(root: string): ScannedFile[] {
  const out: ScannedFile[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return; // removed while scanning (a sandbox directory being torn down)
    }
    for (const name of names) {
      const p = join(dir, name);
      let st;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) {
        let bytes: Buffer;
        try {
          bytes = readFileSync(p);
        } catch {
          continue;
        }
        const rel = relative(root, p);
        out.push({ path: rel, bytes });
        if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
          try {
            out.push({
              path: `${rel}!gunzip`,
              bytes: gunzipSync(bytes, { maxOutputLength: MAX_GUNZIP_BYTES }),
            });
          } catch {
            // not gzip after all, or truncated: the raw bytes were searched
          }
        }
      }
    }
  };
  walk(root);
  return out;
}

/** One line per finding, for a failure message that never prints a secret. */
export const describeFindings = (findings: readonly Finding[]) =>
  findings.map((f) => `${f.secret} (${f.form}) in ${f.where}`).join('\n');

export interface ProcessSeen {
  pid: number;
  cmdline: string;
  bytes: Buffer;
}

const readProc = (pid: number, file: string): Buffer | null => {
  try {
    return readFileSync(`/proc/${pid}/${file}`);
  } catch {
    return null; // exited, or not readable
  }
};

/** The host's process table: pid → parent pid and command name. */
function processTable(): Map<number, { ppid: number; comm: string }> {
  const table = new Map<number, { ppid: number; comm: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProc(Number(name), 'stat')?.toString('latin1');
    if (!stat) continue;
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')');
    table.set(Number(name), {
      comm: stat.slice(stat.indexOf('(') + 1, close),
      ppid: Number(stat.slice(close + 2).split(' ')[1]),
    });
  }
  return table;
}

/**
 * The sandbox processes started under `ancestors`: every `bwrap` process descending from one of
 * them, and everything under it (the sandbox agent, shells, tools).
 */
export function sandboxProcesses(ancestors: readonly number[]): number[] {
  const table = processTable();
  const anc = new Set(ancestors);
  const chain = (pid: number): number[] => {
    const out: number[] = [];
    for (
      let p = table.get(pid)?.ppid, hops = 0;
      p !== undefined && p > 0 && hops < 128;
      p = table.get(p)?.ppid, hops++
    )
      out.push(p);
    return out;
  };
  const bwraps = new Set(
    [...table]
      .filter(([pid, e]) => e.comm === 'bwrap' && chain(pid).some((p) => anc.has(p)))
      .map(([pid]) => pid),
  );
  return [...table.keys()].filter(
    (pid) => bwraps.has(pid) || chain(pid).some((p) => bwraps.has(p)),
  );
}

/** Samples, every `everyMs` until stopped, the environ and cmdline of the `select`ed processes, keeping each distinct one. */
export function watchProcesses(select: () => number[], everyMs = 250): { stop(): ProcessSeen[] } {
  const seen = new Map<string, ProcessSeen>();
  const sample = () => {
    for (const pid of select()) {
      const cmdline = readProc(pid, 'cmdline');
      const environ = readProc(pid, 'environ');
      if (!cmdline && !environ) continue;
      const bytes = Buffer.concat([
        cmdline ?? Buffer.alloc(0),
        Buffer.from('\n--environ--\n'),
        environ ?? Buffer.alloc(0),
      ]);
      const key = `${pid}:${bytes.toString('base64')}`;
      if (!seen.has(key))
        seen.set(key, {
          pid,
          cmdline: (cmdline ?? Buffer.alloc(0)).toString('utf8').split('\0').join(' ').trim(),
          bytes,
        });
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return [...seen.values()];
    },
  };
}
