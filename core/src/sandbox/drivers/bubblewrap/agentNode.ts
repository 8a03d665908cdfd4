/**
 * The node binary a bwrap sandbox's agent runs: a copy of the host's, readable by nobody
 * (mode 0111). The kernel marks a process whose executable it may not read as non-dumpable, and
 * a non-dumpable process's memory, descriptors and environment (/proc/PID/mem, /proc/PID/fd,
 * pidfd_getfd, ptrace, process_vm_readv) are closed to every process without CAP_SYS_PTRACE
 * over it, which no process of the sandbox has: the tenant's commands run under the agent's own
 * uid and still cannot read its requests or write answers on its channel. Chosen over a second
 * uid (bwrap maps one) and over prctl(PR_SET_DUMPABLE) (no native code in the agent). The
 * sandbox's seccomp filter (@agentfleet/sandbox-agent limits/seccomp.ts) is the second wall.
 *
 * One copy per host binary (named by its size, mtime and inode), made once and atomically under
 * the driver's system directory. Proved by test/e2e/sandbox/sandbox-isolation.test.ts.
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';

const made = new Map<string, Promise<string>>();

/** The execute-only copy of `nodeBin` under `dir` (made when missing). */
export function agentNodeCopy(nodeBin: string, dir: string): Promise<string> {
  const key = `${nodeBin}\0${dir}`;
  let p = made.get(key);
  if (!p) {
    p = makeCopy(nodeBin, dir);
    p.catch(() => made.delete(key));
    made.set(key, p);
  }
  return p;
}

async function makeCopy(nodeBin: string, dir: string): Promise<string> {
  const st = await fsp.stat(nodeBin);
  const file = join(dir, `node-${st.size}-${Math.floor(st.mtimeMs)}-${st.ino}`);
  const have = await fsp.stat(file).catch(() => null);
  if (have && have.size === st.size && (have.mode & 0o777) === 0o111) return file;
  await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fsp.copyFile(nodeBin, tmp);
  await fsp.chmod(tmp, 0o111);
  await fsp.rename(tmp, file);
  return file;
}
