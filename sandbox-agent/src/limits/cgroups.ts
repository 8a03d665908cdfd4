/**
 * Per-sandbox control groups: one cgroup per sandbox for each of the `pids`, `memory` and `cpu`
 * controllers, created under THIS process's own cgroup (read from /proc/self/cgroup, so nested
 * hierarchies such as a container's or a service's work), with
 *   - pids:   pids.max = the process cap (processes and threads together),
 *   - memory: v1 memory.limit_in_bytes (+ memory.memsw.limit_in_bytes when present: no swap to
 *             escape to); v2 memory.max (+ memory.swap.max = 0). Over it the kernel's OOM killer
 *             kills inside that cgroup only,
 *   - cpu:    v1 cpu.cfs_quota_us / cpu.cfs_period_us; v2 cpu.max = vCPUs × period.
 * cgroup v1 (one hierarchy per controller, as on this project's CI machine) and v2 (unified,
 * controllers enabled in our cgroup's cgroup.subtree_control; untested here: no v2 host) are
 * both handled. A sandbox joins its cgroups before bwrap runs (see `joinCommand`), so nothing in
 * it ever runs outside them; the sandbox has no cgroup filesystem mounted and its own cgroup
 * namespace, so it cannot move itself out.
 *
 * Proved by core/test/sandbox.limits.test.ts ("fork bomb: …", "processes left holding every
 * slot: …", "memory hog: …", "cpu: …", "cgroups, the disk image and the mount are removed …") and
 * core/test/sandbox.nomad.test.ts ("limits on the client: …").
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

export type CgroupController = 'pids' | 'memory' | 'cpu';
export const CGROUP_CONTROLLERS: CgroupController[] = ['pids', 'memory', 'cpu'];

export interface CgroupLayout {
  version: 1 | 2;
  /** The directory under which per-sandbox cgroups are created, per usable controller. */
  parents: Partial<Record<CgroupController, string>>;
  /** Controllers that cannot be used here, with the reason. */
  problems: Partial<Record<CgroupController, string>>;
}

export interface CgroupLimits {
  processes?: number;
  memoryBytes?: number;
  cpus?: number;
}

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function readMounts(mountinfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const left = line.slice(0, dash).split(' ');
    const right = line.slice(dash + 3).split(' ');
    const unescape = (s: string) =>
      s.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    out.push({
      root: unescape(left[3]),
      mountPoint: unescape(left[4]),
      fsType: right[0],
      superOptions: (right[2] ?? '').split(','),
    });
  }
  return out;
}

/** `own` relative to the mount's root, joined to its mount point (null when not below it). */
function dirFor(m: Mount, own: string): string | null {
  const root = m.root === '/' ? '' : m.root;
  if (own !== root && !own.startsWith(`${root}/`)) return null;
  return join(m.mountPoint, own.slice(root.length));
}

function probeWrite(dir: string, files: Array<[string, string]>): string | null {
  const probe = join(
    dir,
    `agentfleet-probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
  );
  try {
    mkdirSync(probe);
  } catch (err) {
    return `cannot create a cgroup in ${dir}: ${(err as Error).message}`;
  }
  try {
    for (const [f, v] of files) {
      if (!existsSync(join(probe, f))) return `${join(dir, '…', f)} does not exist`;
      writeFileSync(join(probe, f), v);
    }
    return null;
  } catch (err) {
    return `cannot set a limit in ${dir}: ${(err as Error).message}`;
  } finally {
    try {
      rmdirSync(probe);
    } catch {
      /* best effort */
    }
  }
}

const PROBE_FILES: Record<1 | 2, Record<CgroupController, Array<[string, string]>>> = {
  1: {
    pids: [['pids.max', '64']],
    memory: [['memory.limit_in_bytes', String(64 << 20)]],
    cpu: [['cpu.cfs_quota_us', '100000']],
  },
  2: {
    pids: [['pids.max', '64']],
    memory: [['memory.max', String(64 << 20)]],
    cpu: [['cpu.max', '100000 100000']],
  },
};

/**
 * Finds where this process can create per-sandbox cgroups, trying each controller for real
 * (create a cgroup, set a limit, remove it). `procRoot` is for tests only.
 */
export function detectCgroups(procRoot = '/proc'): CgroupLayout {
  const problems: CgroupLayout['problems'] = {};
  const parents: CgroupLayout['parents'] = {};
  let mounts: Mount[];
  let own: string;
  try {
    mounts = readMounts(readFileSync(join(procRoot, 'self/mountinfo'), 'utf8'));
    own = readFileSync(join(procRoot, 'self/cgroup'), 'utf8');
  } catch (err) {
    for (const c of CGROUP_CONTROLLERS)
      problems[c] = `cannot read ${procRoot}/self: ${(err as Error).message}`;
    return { version: 1, parents, problems };
  }
  const ownPaths = new Map<string, string>(); // controller (or '' for v2) → path
  for (const line of own.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') ownPaths.set('', m[2]);
    else for (const c of m[1].split(',')) ownPaths.set(c, m[2]);
  }
  const v1 = mounts.filter((m) => m.fsType === 'cgroup');
  const v2 = mounts.find((m) => m.fsType === 'cgroup2');
  const anyV1 = CGROUP_CONTROLLERS.some((c) => v1.some((m) => m.superOptions.includes(c)));
  if (anyV1 || !v2) {
    for (const c of CGROUP_CONTROLLERS) {
      const m = v1.find((x) => x.superOptions.includes(c));
      const path = ownPaths.get(c);
      if (!m || path === undefined) {
        problems[c] = `the cgroup v1 '${c}' controller is not mounted`;
        continue;
      }
      const dir = dirFor(m, path);
      if (!dir) {
        problems[c] = `this process's '${c}' cgroup (${path}) is outside the mounted hierarchy`;
        continue;
      }
      const why = probeWrite(dir, PROBE_FILES[1][c]);
      if (why) problems[c] = why;
      else parents[c] = dir;
    }
    return { version: 1, parents, problems };
  }
  const path = ownPaths.get('');
  const dir = path === undefined ? null : dirFor(v2, path);
  if (!dir) {
    for (const c of CGROUP_CONTROLLERS)
      problems[c] = 'this process is not in the mounted cgroup v2 hierarchy';
    return { version: 2, parents, problems };
  }
  const available = readText(join(dir, 'cgroup.controllers')).split(/\s+/);
  let enabled = readText(join(dir, 'cgroup.subtree_control')).split(/\s+/);
  const wanted = CGROUP_CONTROLLERS.filter((c) => available.includes(c) && !enabled.includes(c));
  if (wanted.length) {
    // v2's "no internal processes" rule: a cgroup holding processes cannot hand controllers to
    // children. Move this process into a leaf of its own first.
    const enable = () =>
      writeFileSync(join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
    try {
      enable();
    } catch {
      try {
        mkdirSync(join(dir, 'agentfleet-server'), { recursive: true });
        writeFileSync(join(dir, 'agentfleet-server', 'cgroup.procs'), String(process.pid));
        enable();
      } catch {
        /* reported below */
      }
    }
    enabled = readText(join(dir, 'cgroup.subtree_control')).split(/\s+/);
  }
  for (const c of CGROUP_CONTROLLERS) {
    if (!available.includes(c)) {
      problems[c] = `the cgroup v2 '${c}' controller is not available in ${dir}`;
      continue;
    }
    if (!enabled.includes(c)) {
      problems[c] =
        `cannot enable the cgroup v2 '${c}' controller in ${dir}/cgroup.subtree_control`;
      continue;
    }
    const why = probeWrite(dir, PROBE_FILES[2][c]);
    if (why) problems[c] = why;
    else parents[c] = dir;
  }
  return { version: 2, parents, problems };
}

function readText(p: string): string {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return '';
  }
}

/** One sandbox's cgroups (one directory per controller on v1, one on v2). */
export class SandboxCgroup {
  /** Distinct directories (v2: one). */
  readonly dirs: string[];
  private constructor(
    readonly layout: CgroupLayout,
    readonly name: string,
    readonly byController: Partial<Record<CgroupController, string>>,
  ) {
    this.dirs = [...new Set(Object.values(byController))];
  }

  /** Creates the cgroups and sets the limits; removes what it made when a step fails. */
  static create(layout: CgroupLayout, name: string, limits: CgroupLimits): SandboxCgroup {
    const by: Partial<Record<CgroupController, string>> = {};
    for (const c of CGROUP_CONTROLLERS) {
      const parent = layout.parents[c];
      const wantsIt =
        c === 'pids' ? limits.processes : c === 'memory' ? limits.memoryBytes : limits.cpus;
      if (parent && wantsIt !== undefined) by[c] = join(parent, name);
    }
    const cg = new SandboxCgroup(layout, name, by);
    try {
      for (const d of cg.dirs) mkdirSync(d);
      const w = (c: CgroupController, file: string, value: string) =>
        writeFileSync(join(by[c]!, file), value);
      const v = layout.version;
      if (by.pids) w('pids', 'pids.max', String(limits.processes));
      if (by.memory) {
        const bytes = String(limits.memoryBytes);
        if (v === 1) {
          w('memory', 'memory.limit_in_bytes', bytes);
          if (existsSync(join(by.memory, 'memory.memsw.limit_in_bytes')))
            w('memory', 'memory.memsw.limit_in_bytes', bytes);
        } else {
          w('memory', 'memory.max', bytes);
          if (existsSync(join(by.memory, 'memory.swap.max'))) w('memory', 'memory.swap.max', '0');
        }
      }
      if (by.cpu) {
        const period = 100_000;
        const quota = Math.max(1000, Math.round(limits.cpus! * period));
        if (v === 1) {
          w('cpu', 'cpu.cfs_period_us', String(period));
          w('cpu', 'cpu.cfs_quota_us', String(quota));
        } else w('cpu', 'cpu.max', `${quota} ${period}`);
      }
    } catch (err) {
      cg.removeNow();
      throw new Error(`cannot set up the sandbox's cgroups: ${(err as Error).message}`);
    }
    return cg;
  }

  /** The `cgroup.procs` files a process writes its pid to, to join every cgroup of the sandbox. */
  get procsFiles(): string[] {
    return this.dirs.map((d) => join(d, 'cgroup.procs'));
  }

  /** Process ids (thread group leaders) in the sandbox's cgroup. */
  pids(): number[] {
    const d = this.byController.pids ?? this.dirs[0];
    if (!d) return [];
    return readText(join(d, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
  }

  /** Tasks in use and the cap (null without the pids controller). */
  processUsage(): { current: number; max: number } | null {
    const d = this.byController.pids;
    if (!d) return null;
    const current = Number(readText(join(d, 'pids.current')));
    const max = Number(readText(join(d, 'pids.max')));
    return Number.isFinite(current) && Number.isFinite(max) ? { current, max } : null;
  }

  /** Forks refused because the sandbox was at its process cap. */
  processLimitHits(): number {
    const d = this.byController.pids;
    if (!d) return 0;
    const m = /max (\d+)/.exec(readText(join(d, 'pids.events')));
    return m ? Number(m[1]) : 0;
  }

  /** Times the memory limit made the kernel OOM-kill a process in this sandbox. */
  oomKills(): number {
    const d = this.byController.memory;
    if (!d) return 0;
    const file = this.layout.version === 1 ? 'memory.oom_control' : 'memory.events';
    const m = /oom_kill (\d+)/.exec(readText(join(d, file)));
    return m ? Number(m[1]) : 0;
  }

  /** Periods in which the CPU quota held the sandbox back. */
  cpuThrottledPeriods(): number {
    const d = this.byController.cpu;
    if (!d) return 0;
    const m = /nr_throttled (\d+)/.exec(readText(join(d, 'cpu.stat')));
    return m ? Number(m[1]) : 0;
  }

  /**
   * SIGKILLs every process of the sandbox but `keep`, until none is left (a fork bomb may fork
   * while being killed: repeat; the process cap bounds each round). Returns how many were killed.
   */
  killAll(keep: ReadonlySet<number> = new Set()): number {
    let killed = 0;
    for (let round = 0; round < 500; round++) {
      const victims = this.pids().filter((p) => !keep.has(p));
      if (victims.length === 0) break;
      for (const p of victims) {
        try {
          process.kill(p, 'SIGKILL');
          killed++;
        } catch {
          /* already gone */
        }
      }
    }
    return killed;
  }

  /** Kills what is left, then removes the cgroups (retrying while the kernel reaps). */
  async remove(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      this.killAll();
      if (this.removeNow()) return;
      await new Promise((r) => setTimeout(r, 20 + i * 10));
    }
  }

  private removeNow(): boolean {
    let all = true;
    for (const d of this.dirs) {
      try {
        rmdirSync(d);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') all = false;
      }
    }
    return all;
  }
}

/**
 * Removes leftover sandbox cgroups of dead servers: names `<prefix><pid>-…` whose pid is not
 * alive and which hold no process (a crashed server's sandboxes died with it: --die-with-parent).
 */
export function removeStaleCgroups(layout: CgroupLayout, prefix: string): void {
  for (const parent of new Set(Object.values(layout.parents))) {
    let names: string[] = [];
    try {
      names = readdirSync(parent).filter(
        (n) => n.startsWith(prefix) && statSync(join(parent, n)).isDirectory(),
      );
    } catch {
      continue;
    }
    for (const n of names) {
      const pid = Number(/^(\d+)-/.exec(n.slice(prefix.length))?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      if (readText(join(parent, n, 'cgroup.procs')) !== '') continue;
      try {
        rmdirSync(join(parent, n));
      } catch {
        /* in use */
      }
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The command that puts itself in the sandbox's cgroups, then becomes `command` (same pid) with
 * exactly `env`: so bwrap and everything under it start inside. Exit 125 when joining fails
 * (nothing ran). (`env` shows in the wrapper's argv until it execs: no secrets in it.)
 */
export function joinCommand(
  procsFiles: string[],
  command: string[],
  env: Record<string, string> = {},
): string[] {
  if (procsFiles.length === 0) return command;
  // `env -i`: the shell exports PWD; the command starts with exactly `env` all the same
  const script =
    'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec /usr/bin/env -i "$@"';
  return [
    '/bin/sh',
    '-c',
    script,
    'agentfleet-sandbox',
    ...procsFiles,
    '--',
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    ...command,
  ];
}
