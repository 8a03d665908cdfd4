/**
 * One process owns an embedded data dir. SQLite's own file locking is not enough: two
 * processes opening the same database would both "work" and interleave their writes, so a
 * LOCK file holding the owner's pid keeps a second process (or a second open in this process)
 * out; a lock whose pid is dead is taken over. Moved unchanged from the pre-SQLite wal.ts.
 * Tests: core/test/store.embedded.test.ts "refuses a second open of a live dir …", "takes over
 * a stale lock …", "a second process cannot open a locked dir".
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
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
