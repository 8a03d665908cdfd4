/**
 * One local sandbox's confinement: its disk (a size-capped filesystem mounted at the sandbox's
 * host directory), its cgroups (processes, memory, CPU) joined before bwrap runs, and a process
 * watchdog. Created before the sandbox starts, released after it has exited.
 *
 * Runaway processes: a fork bomb started in the background, or under `timeout` (whose kill of its
 * process group misses children forked at that moment), can keep every process slot of the
 * sandbox taken after its tool call has returned, so that nothing else could run there again.
 * So every process in the sandbox but bwrap, the sandbox's init and the agent is killed (logged
 * as a warning) when an exec call returns after forks were refused at the cap during it, and by
 * a watchdog when the sandbox stays at its cap for two checks (500 ms apart) or keeps having
 * forks refused for three: the session goes on. The exec result of a call that ran a quiet
 * sandbox into its cap (or saw an OOM kill) is reported as failed, with a note on stderr.
 *
 * Proved by core/test/sandbox.limits.test.ts (local driver) and core/test/sandbox.nomad.test.ts
 * (launcher).
 */
import { readFileSync } from 'node:fs';
import { joinCommand, SandboxCgroup, type CgroupLayout } from './cgroups.js';
import { mountDiskQuota, unmountDiskQuota, type DiskQuotaTools } from './diskQuota.js';
import type { ExecClient, SandboxLimitName, SandboxResources, WarningLog } from './types.js';

export const CGROUP_PREFIX = 'agentfleet-sbx-';
const WATCH_MS = 500;

export interface ConfinementOptions {
  /** Unique per sandbox: names its cgroups. */
  name: string;
  /** The sandbox's host directory (exists, empty): the disk is mounted here. */
  hostDir: string;
  /** Where the disk image lives (beside hostDir). */
  image: string;
  resources: SandboxResources;
  enforce: ReadonlySet<SandboxLimitName>;
  cgroups: CgroupLayout | null;
  disk: DiskQuotaTools | null;
  log?: WarningLog;
}

function parentPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid …: comm may hold spaces and parentheses
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

export class SandboxConfinement {
  private timer: NodeJS.Timeout | null = null;
  private keep = new Set<number>();
  private released: Promise<void> | null = null;
  private lastForks = 0;
  private lastRefusalAt = 0;
  /** Runaway processes killed by the watchdog so far. */
  runawayKilled = 0;

  private constructor(
    private readonly o: ConfinementOptions,
    readonly cgroup: SandboxCgroup | null,
    private diskMounted: boolean,
  ) {
    this.diskEnforced = diskMounted;
  }

  /** Whether the sandbox has its own size-capped filesystem. */
  readonly diskEnforced: boolean;

  /**
   * Once the sandbox runs (its own mount namespace holds binds of the disk): unmounts the disk on
   * the host side (lazily while something there still uses it) and deletes the image file. The
   * filesystem lives on in the sandbox until it exits, then the kernel frees it: nothing is left
   * behind even if this process is killed (the Nomad launcher uses this).
   */
  async detachDisk(): Promise<void> {
    if (!this.diskMounted) return;
    this.diskMounted = false;
    await unmountDiskQuota(this.o.disk!, this.o.image, this.o.hostDir);
  }

  static async create(o: ConfinementOptions): Promise<SandboxConfinement> {
    const diskMounted = !!(o.disk && o.enforce.has('disk'));
    if (diskMounted)
      await mountDiskQuota(o.disk!, o.image, o.hostDir, o.resources.diskMb * 1024 * 1024);
    let cgroup: SandboxCgroup | null = null;
    if (o.cgroups) {
      try {
        cgroup = SandboxCgroup.create(o.cgroups, `${CGROUP_PREFIX}${process.pid}-${o.name}`, {
          processes: o.enforce.has('processes') ? o.resources.processes : undefined,
          memoryBytes: o.enforce.has('memory') ? o.resources.memoryMb * 1024 * 1024 : undefined,
          cpus: o.enforce.has('cpu') ? o.resources.cpus : undefined,
        });
        if (cgroup.dirs.length === 0) cgroup = null;
      } catch (err) {
        if (diskMounted) await unmountDiskQuota(o.disk!, o.image, o.hostDir).catch(() => {});
        throw err;
      }
    }
    return new SandboxConfinement(o, cgroup, diskMounted);
  }

  /** `command` wrapped so that it joins the sandbox's cgroups first (same pid), started with exactly `env`. */
  command(command: string[], env: Record<string, string> = {}): string[] {
    return joinCommand(this.cgroup?.procsFiles ?? [], command, env);
  }

  /** Starts the process watchdog once the sandbox's agent runs (`bwrapPid`: the host pid of bwrap). */
  watch(bwrapPid: number): void {
    const cg = this.cgroup;
    if (!cg || !cg.processUsage() || this.timer) return;
    const inside = cg.pids();
    const init = inside.filter((p) => parentPid(p) === bwrapPid);
    const agent = inside.filter((p) => init.includes(parentPid(p) ?? -1));
    this.keep = new Set([bwrapPid, ...init, ...agent]);
    let saturated = 0;
    let refusing = 0;
    this.lastForks = cg.processLimitHits();
    this.timer = setInterval(() => {
      const u = cg.processUsage();
      const forks = cg.processLimitHits();
      if (forks > this.lastForks) {
        this.lastRefusalAt = Date.now();
        refusing++;
      } else refusing = 0;
      this.lastForks = forks;
      saturated = u && u.current >= u.max - 2 ? saturated + 1 : 0;
      // at the cap for two checks, or forks refused in three checks running (a bomb's survivors retrying)
      if (saturated < 2 && refusing < 3) return;
      saturated = refusing = 0;
      const n = cg.killAll(this.keep);
      this.runawayKilled += n;
      this.o.log?.warn('sandbox at its process limit: its runaway processes were killed', {
        sandbox: this.o.name,
        limit: u?.max,
        killed: n,
      });
    }, WATCH_MS);
    this.timer.unref();
  }

  /**
   * `api` whose exec reports the sandbox's limits being hit during the call (forks refused at the
   * process cap, runaway processes killed, an OOM kill): a note on stderr, and a command that
   * still exited 0 is reported as failed (exit 1), so the tool result is an error, when the hit
   * is the command's own doing (the sandbox was quiet when it started; an OOM kill always).
   */
  reportingLimits<T extends ExecClient>(api: T): T {
    const cg = this.cgroup;
    if (!cg) return api;
    const counters = () => ({
      forks: cg.processLimitHits(),
      ooms: cg.oomKills(),
      runaway: this.runawayKilled,
    });
    const r = this.o.resources;
    // the client's other members (a `closed` getter among them) stay the client's own
    const reporting = Object.create(api) as T;
    reporting.exec = (async (params: never) => {
      // Counters are the sandbox's, not the command's: a command is reported as failed only when
      // the sandbox was quiet when it started (below its cap, no fork refused lately), else noted.
      const usage = cg.processUsage();
      const quiet =
        !!usage &&
        usage.current < usage.max - 2 &&
        cg.processLimitHits() === this.lastForks &&
        Date.now() - this.lastRefusalAt > 2 * WATCH_MS;
      const before = counters();
      const result = await api.exec(params);
      // the command ran the sandbox into its cap: what it left running goes with it (a bomb's
      // survivors), so that the next call finds free slots
      if (cg.processLimitHits() > before.forks && this.keep.size) {
        const n = cg.killAll(this.keep);
        this.runawayKilled += n;
        if (n)
          this.o.log?.warn(
            'sandbox command hit the process limit: its runaway processes were killed',
            { sandbox: this.o.name, limit: this.o.resources.processes, killed: n },
          );
      }
      const after = counters();
      const notes: string[] = [];
      if (after.forks > before.forks || after.runaway > before.runaway) {
        notes.push(
          `sandbox: the process limit (${r.processes}) was reached: ${after.forks - before.forks} forks refused${after.runaway > before.runaway ? `, ${after.runaway - before.runaway} runaway processes killed` : ''}`,
        );
      }
      if (after.ooms > before.ooms)
        notes.push(
          `sandbox: the memory limit (${r.memoryMb} MB) was reached: ${after.ooms - before.ooms} process(es) killed (out of memory)`,
        );
      if (!notes.length) return result;
      const failed = quiet || after.ooms > before.ooms;
      return {
        ...result,
        exitCode: failed && result.exitCode === 0 ? 1 : result.exitCode,
        stderr: `${result.stderr}${result.stderr && !result.stderr.endsWith('\n') ? '\n' : ''}${notes.join('\n')}\n`,
      };
    }) as T['exec'];
    return reporting;
  }

  /** After the sandbox has exited: stops the watchdog, kills leftovers, removes the cgroups, unmounts the disk. */
  release(): Promise<void> {
    return (this.released ??= (async () => {
      if (this.timer) clearInterval(this.timer);
      await this.cgroup?.remove();
      if (this.diskMounted) await unmountDiskQuota(this.o.disk!, this.o.image, this.o.hostDir);
    })());
  }
}
