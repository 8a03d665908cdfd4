/**
 * Where the machine's CPU went during a timed window, from /proc (Linux; elsewhere `null`): the
 * share of all cores that was busy, and the share each group of processes used. Groups are the
 * processes given by pid (the platform's) and the real servers found by their command lines
 * (FerretDB, PostgreSQL, Kafka, Redis). Shares are of the whole machine (2 cores busy = 100 %), so
 * a saturated machine shows who saturated it. Section g prints it beside each worker count.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Real servers by a fragment of their command line (first match wins). */
const SERVERS: ReadonlyArray<[group: string, fragment: string]> = [
  ['FerretDB', 'ferretdb'],
  ['PostgreSQL', 'postgres'],
  ['Kafka', 'kafka.Kafka'],
  ['Redis', 'redis-server'],
];

interface Sample {
  total: number;
  idle: number;
  /** CPU ticks by pid, with the group each pid belongs to. */
  ticks: Map<number, { group: string; ticks: number }>;
}

export interface CpuShare {
  /** Busy share of all cores over the window, %. */
  busyPct: number;
  /** Each group's share of all cores over the window, %, largest first. */
  groups: Array<{ group: string; pct: number }>;
}

function machineTicks(): { total: number; idle: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { total, idle: v[3]! + v[4]! };
}

function pidTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]); // utime, stime
  } catch {
    return null;
  }
}

function serverPids(): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const hit = SERVERS.find(([, fragment]) => cmd.includes(fragment));
    if (hit) out.push([Number(name), hit[0]]);
  }
  return out;
}

function sample(own: Record<string, number[]>): Sample {
  const ticks = new Map<number, { group: string; ticks: number }>();
  for (const [pid, group] of serverPids()) {
    const t = pidTicks(pid);
    if (t !== null) ticks.set(pid, { group, ticks: t });
  }
  for (const [group, pids] of Object.entries(own))
    for (const pid of pids) {
      const t = pidTicks(pid);
      if (t !== null) ticks.set(pid, { group, ticks: t });
    }
  return { ...machineTicks(), ticks };
}

/** Starts a window; the returned function ends it (null where /proc is not readable). */
export function cpuWindow(own: Record<string, number[]>): () => CpuShare | null {
  let start: Sample;
  try {
    start = sample(own);
  } catch {
    return () => null;
  }
  return () => {
    let end: Sample;
    try {
      end = sample(own);
    } catch {
      return null;
    }
    const total = end.total - start.total;
    if (total <= 0) return null;
    const byGroup = new Map<string, number>();
    // A process that started during the window counts from zero; one that ended is left out.
    for (const [pid, e] of end.ticks) {
      const used = e.ticks - (start.ticks.get(pid)?.ticks ?? 0);
      byGroup.set(e.group, (byGroup.get(e.group) ?? 0) + Math.max(0, used));
    }
    return {
      busyPct: (100 * (total - (end.idle - start.idle))) / total,
      groups: [...byGroup]
        .map(([group, t]) => ({ group, pct: (100 * t) / total }))
        .sort((a, b) => b.pct - a.pct),
    };
  };
}

/** "97 % busy: FerretDB 31 %, PostgreSQL 24 %, …" (groups under 0.5 % left out). */
export function describeCpu(c: CpuShare | null): string {
  if (!c) return 'not measured (no /proc)';
  const parts = c.groups.filter((g) => g.pct >= 0.5).map((g) => `${g.group} ${g.pct.toFixed(0)} %`);
  return `${c.busyPct.toFixed(0)} % busy: ${parts.join(', ')}`;
}
