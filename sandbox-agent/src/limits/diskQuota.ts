/**
 * One size-capped filesystem per sandbox: a sparse image file formatted ext4 and loop-mounted
 * at the sandbox's host directory, which holds workspace/, tmp/, home/ and outputs/. So the four
 * share ONE quota (the instance size's disk), a full disk is ENOSPC inside that sandbox only, and
 * the image takes only the space actually written (sparse). Why not tmpfs: it lives in RAM
 * (a 4 GB disk would be 4 GB of memory, charged to the sandbox's memory limit); why not project
 * quotas: they need the data dir on XFS/ext4 with quotas enabled, which we cannot assume.
 * Mounted nosuid,nodev; ext4 without a journal (the sandbox's files do not outlive it: snapshots
 * do), no reserved blocks. Needs root (mount) and loop devices.
 *
 * Proved by core/test/sandbox.limits.test.ts ("disk filler").
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** Tools run with this environment only (never the server's). */
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };
const MIN_BYTES = 8 * 1024 * 1024;

export interface DiskQuotaTools {
  mkfs: string;
  mount: string;
  umount: string;
}

function find(names: string[]): string | null {
  for (const n of names) if (existsSync(n)) return n;
  return null;
}

/** The tools, or why the quota cannot be had here. */
export function diskQuotaTools(): { tools: DiskQuotaTools } | { problem: string } {
  const mkfs = find(['/usr/sbin/mkfs.ext4', '/sbin/mkfs.ext4', '/usr/sbin/mke2fs', '/sbin/mke2fs']);
  const mount = find(['/usr/bin/mount', '/bin/mount']);
  const umount = find(['/usr/bin/umount', '/bin/umount']);
  if (!mkfs) return { problem: 'mkfs.ext4 not found (Debian/Ubuntu: apt-get install e2fsprogs)' };
  if (!mount || !umount) return { problem: 'mount/umount not found (apt-get install mount)' };
  if (process.getuid?.() !== 0)
    return { problem: 'loop-mounting a per-sandbox filesystem needs root' };
  if (!existsSync('/dev/loop-control'))
    return { problem: '/dev/loop-control is missing (no loop devices)' };
  return { tools: { mkfs, mount, umount } };
}

const errText = (err: unknown) => {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim().split('\n').slice(-3).join(' ');
};

/** Creates `image` (sparse, `bytes`), formats it and mounts it at `mountPoint` (an existing, empty directory). */
export async function mountDiskQuota(
  tools: DiskQuotaTools,
  image: string,
  mountPoint: string,
  bytes: number,
): Promise<void> {
  const size = Math.max(MIN_BYTES, Math.floor(bytes / 4096) * 4096);
  await fsp.rm(image, { force: true });
  const fh = await fsp.open(image, 'wx', 0o600);
  try {
    await fh.truncate(size);
  } finally {
    await fh.close();
  }
  try {
    await run(
      tools.mkfs,
      [
        '-t',
        'ext4',
        '-q',
        '-F',
        '-m',
        '0',
        '-O',
        '^has_journal',
        '-E',
        'lazy_itable_init=1,nodiscard',
        image,
      ],
      { env: TOOL_ENV },
    );
    await run(tools.mount, ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, mountPoint], {
      env: TOOL_ENV,
    });
  } catch (err) {
    await fsp.rm(image, { force: true });
    throw new Error(
      `cannot create the sandbox's ${Math.round(size / 1048576)} MB disk: ${errText(err)}`,
    );
  }
}

/** Whether `p` is a mount point (another device than its parent). */
export function isMountPoint(p: string): boolean {
  try {
    return statSync(p).dev !== statSync(dirname(p)).dev;
  } catch {
    return false;
  }
}

/** Unmounts (lazily when still busy: the loop device goes once the last user is gone) and deletes the image. */
export async function unmountDiskQuota(
  tools: DiskQuotaTools,
  image: string,
  mountPoint: string,
): Promise<void> {
  if (isMountPoint(mountPoint)) {
    try {
      await run(tools.umount, [mountPoint], { env: TOOL_ENV });
    } catch {
      await run(tools.umount, ['-l', mountPoint], { env: TOOL_ENV }).catch(() => {});
    }
  }
  await fsp.rm(image, { force: true });
}

/** Tries the whole cycle once in `workDir` (start-up check): null when it works, else why not. */
export async function probeDiskQuota(workDir: string): Promise<string | null> {
  const t = diskQuotaTools();
  if ('problem' in t) return t.problem;
  const dir = `${workDir}/.disk-probe-${process.pid}`;
  try {
    await fsp.mkdir(dir, { recursive: true });
    await mountDiskQuota(t.tools, `${dir}.img`, dir, MIN_BYTES);
    await unmountDiskQuota(t.tools, `${dir}.img`, dir);
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await unmountDiskQuota(t.tools, `${dir}.img`, dir).catch(() => {});
    await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** Records that the process `pid` owns the disk at `mountPoint` (see removeStaleDisks). */
export async function markOwner(mountPoint: string, pid = process.pid): Promise<void> {
  await fsp.writeFile(`${mountPoint}.owner`, `${pid}\n`, { mode: 0o600 });
}

/**
 * Unmounts and deletes the disks under `rootDir` whose owning server process is dead (it was
 * killed: its sandboxes died with it, their mounts stayed). Directories are left to the caller.
 */
export async function removeStaleDisks(tools: DiskQuotaTools, rootDir: string): Promise<string[]> {
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = (await fsp.readdir(rootDir)).filter((n) => n.endsWith('.owner'));
  } catch {
    return removed;
  }
  for (const n of names) {
    const mountPoint = `${rootDir}/${n.slice(0, -'.owner'.length)}`;
    const pid = Number((await fsp.readFile(`${rootDir}/${n}`, 'utf8').catch(() => '')).trim());
    if (pid && pid !== process.pid && alive(pid)) continue;
    if (pid === process.pid) continue;
    await unmountDiskQuota(tools, `${mountPoint}.img`, mountPoint).catch(() => {});
    await fsp.rm(mountPoint, { recursive: true, force: true }).catch(() => {});
    await fsp.rm(`${rootDir}/${n}`, { force: true });
    removed.push(mountPoint);
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
