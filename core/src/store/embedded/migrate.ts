/**
 * One-time import of the pre-SQLite store (wal-* / snapshot files, read by legacy.ts) into
 * `<dir>/store.sqlite3`, called by openEmbeddedStore under the dir lock when the database does
 * not exist yet. Guarantees (contract c14 S ↔ L):
 * - the database is built at `store.sqlite3.importing` (a leftover one is deleted first),
 *   records applied in order (put = INSERT OR REPLACE, del = DELETE) in transactions of 10k,
 *   closed, fsynced, renamed to store.sqlite3 and the dir fsynced; only then are the old files
 *   moved aside by retireLegacyStore (kept, never deleted) and one line is logged;
 * - a crash anywhere before the rename leaves the old files untouched and the import restarts
 *   on the next open.
 * Tests: core/test/store.upgrade.test.ts (engineer L).
 */
import { open, rename, rm } from 'node:fs/promises';
import Database from 'better-sqlite3';
import type { Logger } from '../../log.js';
import { fsyncDir } from './lock.js';
import { createMetaTables, createTable, tableName } from './tables.js';

type LegacyRecord =
  | { c: string; op: 'put'; doc: { _id: string } & Record<string, unknown> }
  | { c: string; op: 'del'; id: string };
interface LegacyStore {
  files: string[];
  records(): AsyncIterable<LegacyRecord>;
}
interface LegacyModule {
  findLegacyStore(dir: string): Promise<LegacyStore | null>;
  retireLegacyStore(store: LegacyStore, dir: string): Promise<string>;
}

const BATCH = 10_000;
// A variable specifier: legacy.ts is engineer L's module and may land after this one.
const LEGACY_MODULE = './legacy.js';

async function fsyncFile(file: string): Promise<void> {
  const fh = await open(file, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function importLegacyStore(dir: string, file: string, log: Logger): Promise<void> {
  const mod = (await import(LEGACY_MODULE).catch(() => null)) as LegacyModule | null;
  const legacy = mod ? await mod.findLegacyStore(dir) : null;
  if (!mod || !legacy) return;
  const tmp = `${file}.importing`;
  for (const f of [tmp, `${tmp}-journal`, `${tmp}-wal`, `${tmp}-shm`]) await rm(f, { force: true });
  const db = new Database(tmp);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    createMetaTables(db);
    const tables = new Set<string>();
    const stmts = new Map<string, { put: Database.Statement; del: Database.Statement }>();
    const of = (c: string) => {
      let s = stmts.get(c);
      if (!s) {
        createTable(db, c);
        tables.add(c);
        const t = tableName(c);
        s = {
          put: db.prepare(`INSERT OR REPLACE INTO ${t} (_id, doc) VALUES (?, ?)`),
          del: db.prepare(`DELETE FROM ${t} WHERE _id = ?`),
        };
        stmts.set(c, s);
      }
      return s;
    };
    let n = 0;
    db.exec('BEGIN');
    for await (const rec of legacy.records()) {
      if (rec.op === 'put') of(rec.c).put.run(rec.doc._id, JSON.stringify(rec.doc));
      else of(rec.c).del.run(rec.id);
      if (++n % BATCH === 0) {
        db.exec('COMMIT');
        db.exec('BEGIN');
      }
    }
    db.exec('COMMIT');
    let docs = 0,
      collections = 0;
    for (const c of tables) {
      const count = db
        .prepare(`SELECT count(*) FROM ${tableName(c)}`)
        .pluck()
        .get() as number;
      docs += count;
      if (count) collections++;
    }
    db.close();
    await fsyncFile(tmp);
    await rename(tmp, file);
    await fsyncDir(dir);
    const kept = await mod.retireLegacyStore(legacy, dir);
    log.info(
      `store: imported ${docs} documents in ${collections} collections from the pre-SQLite store; old files kept in ${kept}`,
    );
  } finally {
    if (db.open) db.close();
  }
}
