/**
 * Durability for the embedded DocumentStore: a write-ahead log of whole documents, snapshots,
 * recovery on open and the dir's lock file. Guarantees:
 * - an operation resolves only once its log record and every earlier one is fdatasync'ed;
 *   reads also wait for earlier writes to be durable, so no caller observes a state a crash
 *   could undo. Records appended while a sync is in flight share the next sync;
 * - recovery loads the newest complete snapshot N and replays logs N, N+1, ... in order. Only
 *   an invalid last line of the newest log (a torn write) is dropped and truncated away; any
 *   other invalid line fails the open;
 * - compaction switches appends to log N+1, then writes snapshot N+1 (tmp, fsync, rename, fsync
 *   dir) from the documents as of the switch, then deletes older files. Records hold whole
 *   documents or deletions, so replaying log N+1 over snapshot N+1 is idempotent, and until
 *   snapshot N+1 exists recovery replays logs N and N+1 over snapshot N: a crash loses nothing;
 * - a LOCK file holding the owner's pid keeps a second process (or a second open in this
 *   process) out of the dir; a lock whose pid is dead is taken over;
 * - after a failed log write `Log.failed` is set and every pending and later settle() rejects.
 */
import { randomBytes } from 'node:crypto';
import {
  link,
  open,
  readdir,
  readFile,
  rename,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { Doc } from '../../ports/store.js';

export type Raw = Doc & Record<string, unknown>;
export type Rec = { c: string; op: 'put'; doc: Raw } | { c: string; op: 'del'; id: string };

const pad = (gen: number) => String(gen).padStart(12, '0');
const walName = (gen: number) => `wal-${pad(gen)}.log`;
const snapName = (gen: number) => `snapshot-${pad(gen)}.jsonl`;
const WAL_RE = /^wal-(\d{12})\.log$/;
const SNAP_RE = /^snapshot-(\d{12})\.jsonl$/;
const gens = (names: string[], re: RegExp) =>
  names
    .map((n) => re.exec(n))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
  for (let off = 0; off < buf.length;)
    off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}

/** Calls `fn` per line with its byte offset; returns the file size. */
async function eachLine(
  file: string,
  fn: (text: string, start: number, terminated: boolean) => void,
): Promise<number> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let carry = Buffer.alloc(0),
      pos = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      const data = carry.length
        ? Buffer.concat([carry, buf.subarray(0, bytesRead)])
        : buf.subarray(0, bytesRead);
      let s = 0;
      for (let nl = data.indexOf(10, s); nl !== -1; nl = data.indexOf(10, s)) {
        fn(data.toString('utf8', s, nl), pos + s, true);
        s = nl + 1;
      }
      carry = Buffer.from(data.subarray(s));
      pos += s;
    }
    if (carry.length) fn(carry.toString('utf8'), pos, false);
    return pos + carry.length;
  } finally {
    await fh.close();
  }
}

function asRecord(v: unknown): Rec | undefined {
  const r = v as Record<string, unknown> | null;
  if (typeof r !== 'object' || r === null || typeof r.c !== 'string') return undefined;
  const doc = r.doc as Raw | null;
  if (r.op === 'put' && typeof doc === 'object' && doc !== null && typeof doc._id === 'string')
    return r as Rec;
  if (r.op === 'del' && typeof r.id === 'string') return r as Rec;
  return undefined;
}

async function readSnapshot(file: string, apply: (r: Rec) => void): Promise<void> {
  let n = 0,
    count = 0,
    end: number | undefined;
  await eachLine(file, (text, _start, terminated) => {
    n++;
    const fail = (why: string): never => {
      throw new Error(`embedded store: snapshot ${file} line ${n} ${why}; refusing to open`);
    };
    if (end !== undefined) fail('follows the end marker');
    let v: Record<string, unknown> | null = null;
    try {
      v = JSON.parse(text);
    } catch {
      fail('is not valid JSON');
    }
    if (!terminated) fail('is truncated');
    if (n === 1) {
      if (v?.snapshot !== 1) fail('is not a snapshot header');
      return;
    }
    if (typeof v?.end === 'number') {
      if (v.end !== count) fail(`declares ${v.end} documents but ${count} precede it`);
      end = v.end;
      return;
    }
    const rec = asRecord(v);
    if (rec?.op !== 'put') return fail('is not a document record');
    apply(rec);
    count++;
  });
  if (end === undefined)
    throw new Error(`embedded store: snapshot ${file} has no end marker; refusing to open`);
}

/** Replays one log; a bad last line of the newest log is truncated away, anywhere else it fails. */
async function replay(file: string, apply: (r: Rec) => void, newest: boolean): Promise<number> {
  let n = 0,
    bad: { line: number; offset: number } | undefined;
  const corrupt = () =>
    new Error(
      `embedded store: log ${file} line ${bad?.line} (byte ${bad?.offset}) is corrupt; refusing to open ` +
        '(only a torn last line of the newest log is skipped)',
    );
  const size = await eachLine(file, (text, start, terminated) => {
    n++;
    if (bad) throw corrupt();
    let rec: Rec | undefined;
    try {
      rec = terminated ? asRecord(JSON.parse(text)) : undefined;
    } catch {
      rec = undefined;
    }
    if (rec) apply(rec);
    else bad = { line: n, offset: start };
  });
  if (!bad) return size;
  if (!newest) throw corrupt();
  const fh = await open(file, 'r+');
  try {
    await fh.truncate(bad.offset);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return bad.offset;
}

/** Loads snapshot + logs into `apply`; returns the newest log opened for appending. */
export async function recover(
  dir: string,
  apply: (r: Rec) => void,
): Promise<{ fh: FileHandle; gen: number; bytes: number }> {
  const names = await readdir(dir);
  const snaps = gens(names, SNAP_RE),
    wals = gens(names, WAL_RE);
  const base = snaps.length ? snaps[snaps.length - 1] : 0;
  for (const n of names) if (n.endsWith('.tmp')) await unlink(join(dir, n));
  for (const g of snaps) if (g < base) await unlink(join(dir, snapName(g)));
  for (const g of wals) if (g < base) await unlink(join(dir, walName(g)));
  const live = wals.filter((g) => g >= base);
  live.forEach((g, i) => {
    if (g !== base + i)
      throw new Error(
        `embedded store ${dir}: ${walName(base + i)} is missing before ${walName(g)}; refusing to open`,
      );
  });
  if (snaps.length) await readSnapshot(join(dir, snapName(base)), apply);
  let bytes = 0;
  for (const [i, g] of live.entries())
    bytes = await replay(join(dir, walName(g)), apply, i === live.length - 1);
  const gen = live.length ? live[live.length - 1] : base;
  const fh = await open(join(dir, walName(gen)), 'a');
  if (!live.length) await fsyncDir(dir);
  return { fh, gen, bytes };
}

export class Log {
  syncs = 0;
  records = 0;
  compactions = 0;
  compactionError?: string;
  failed?: Error;
  private pending: string[] = [];
  private appended = 0;
  private durable = 0;
  private waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private running?: Promise<void>;
  private compaction?: Promise<void>;

  constructor(
    private readonly dir: string,
    private fh: FileHandle,
    private gen: number,
    public bytes: number,
    private readonly compactAfter: number,
    private readonly cut: () => Rec[],
  ) {}

  append(rec: Rec): void {
    this.pending.push(`${JSON.stringify(rec)}\n`);
    this.appended++;
    this.running ??= new Promise<void>((r) => setImmediate(r)).then(() => this.flush());
  }

  /** Resolves once everything appended so far is durable. */
  settle(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const seq = this.appended;
    if (this.durable >= seq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending,
          upTo = this.appended;
        this.pending = [];
        const buf = Buffer.from(batch.join(''));
        await writeAll(this.fh, buf);
        await this.fh.datasync();
        this.syncs++;
        this.records += batch.length;
        this.bytes += buf.length;
        this.durable = upTo;
        let n = 0;
        while (n < this.waiters.length && this.waiters[n].seq <= upTo) n++;
        for (const w of this.waiters.splice(0, n)) w.resolve();
        if (this.bytes > this.compactAfter && !this.compaction) await this.rotate();
      }
    } catch (err) {
      this.failed = new Error(
        `embedded store ${this.dir}: log write failed; the store refuses further operations`,
        { cause: err },
      );
      for (const w of this.waiters.splice(0)) w.reject(this.failed);
    } finally {
      this.running = undefined;
    }
  }

  /** Runs between batches: switches appends to a new log, then snapshots in the background. */
  private async rotate(): Promise<void> {
    const gen = this.gen + 1;
    let fh: FileHandle | undefined;
    try {
      fh = await open(join(this.dir, walName(gen)), 'w');
      await fsyncDir(this.dir);
    } catch (err) {
      await fh?.close().catch(() => undefined);
      this.compactionError = String(err);
      return;
    }
    const cut = this.cut(),
      old = this.fh;
    [this.fh, this.gen, this.bytes] = [fh, gen, 0];
    await old.close().catch(() => undefined);
    this.compaction = this.snapshot(gen, cut)
      .then(
        () => {
          this.compactions++;
          this.compactionError = undefined;
        },
        (err) => {
          this.compactionError = String(err);
        },
      )
      .finally(() => {
        this.compaction = undefined;
      });
  }

  private async snapshot(gen: number, cut: Rec[]): Promise<void> {
    const tmp = join(this.dir, `${snapName(gen)}.tmp`);
    const fh = await open(tmp, 'w');
    try {
      let chunk = `${JSON.stringify({ snapshot: 1, gen })}\n`;
      for (const rec of cut) {
        chunk += `${JSON.stringify(rec)}\n`;
        if (chunk.length >= 1 << 20) {
          await writeAll(fh, Buffer.from(chunk));
          chunk = '';
        }
      }
      await writeAll(fh, Buffer.from(`${chunk}${JSON.stringify({ end: cut.length })}\n`));
      await fh.sync();
    } catch (err) {
      await fh.close();
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await fh.close();
    await rename(tmp, join(this.dir, snapName(gen)));
    await fsyncDir(this.dir);
    const names = await readdir(this.dir);
    for (const g of gens(names, SNAP_RE)) if (g < gen) await unlink(join(this.dir, snapName(g)));
    for (const g of gens(names, WAL_RE)) if (g < gen) await unlink(join(this.dir, walName(g)));
  }

  /** Drains pending records and any compaction, then closes the log file. */
  async close(): Promise<void> {
    while (this.running || this.compaction) await (this.running ?? this.compaction);
    await this.fh.close();
    if (this.failed) throw this.failed;
  }
}

const lockedHere = new Set<string>();

async function readPid(file: string): Promise<number | undefined> {
  try {
    return Number.parseInt(await readFile(file, 'utf8'), 10);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates `dir/LOCK` (pid inside) atomically via link; returns the release function. */
export async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const file = join(dir, 'LOCK');
  const mine = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(mine, file);
        lockedHere.add(dir);
        return async () => {
          lockedHere.delete(dir);
          await unlink(file).catch(() => undefined);
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = await readPid(file);
      if (pid === undefined) continue;
      // The same pid without an in-process holder is a previous incarnation (e.g. pid 1 in a container).
      if (isAlive(pid) && (pid !== process.pid || lockedHere.has(dir))) {
        throw new Error(
          `embedded store dir ${dir} is locked by pid ${pid} (${file}); stop that process, or delete the lock file if no process uses the dir`,
        );
      }
      const aside = `${mine}.stale`;
      try {
        await rename(file, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const moved = await readPid(aside);
      if (!Object.is(moved, pid)) {
        await link(aside, file).catch(() => undefined);
        await unlink(aside);
        throw new Error(
          `embedded store dir ${dir}: another process took over the stale lock concurrently`,
        );
      }
      await unlink(aside);
    }
    throw new Error(`embedded store dir ${dir}: could not acquire ${file}`);
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}
