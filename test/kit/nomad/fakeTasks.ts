/**
 * The client half of the Nomad fake (see fakeCluster.ts): runs an allocation's tasks on THIS
 * machine as child processes with raw_exec semantics (no isolation whatever the driver says; the
 * client's environment is passed on, plus the NOMAD_* variables, with `${...}` interpolation in
 * the command, its arguments and the task env), writes their stdout/stderr to
 * `<alloc dir>/alloc/logs/<task>.std{out,err}.0`, and records TaskStates events as Nomad does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';

export type Json = any;

export class FakeError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface TaskRun {
  name: string;
  proc: ChildProcess | null;
  killing: boolean;
  oom: boolean;
  killTimer: NodeJS.Timeout | null;
}

export interface AllocRecord {
  alloc: Json;
  dir: string;
  runs: Map<string, TaskRun>;
  /** CPU MHz, cores and memory this allocation holds on the node while not terminal. */
  usage: { cpu: number; cores: number; memory: number };
}

/** What the task runner needs of the cluster. */
export interface TaskHost {
  readonly region: string;
  readonly datacenter: string;
  readonly nodeId: string;
  readonly nodeName: string;
  readonly closed: boolean;
  readonly allocs: Map<string, AllocRecord>;
  /** Records a change of the allocation (new ModifyIndex, job status). */
  touch(rec: AllocRecord): void;
}

export const nowNs = () => Date.now() * 1_000_000;
const iso = () => new Date().toISOString();
const signalNumber = (sig: string | null): number =>
  sig ? ((osConstants.signals as Record<string, number>)[sig] ?? 0) : 0;

export function taskEvent(type: string, display: string, extra: Json = {}): Json {
  return {
    Type: type,
    Time: nowNs(),
    DisplayMessage: display,
    Message: '',
    Details: {},
    ExitCode: 0,
    Signal: 0,
    FailsTask: false,
    DriverError: '',
    SetupError: '',
    KillReason: '',
    KillTimeout: 0,
    ...extra,
  };
}

export class FakeTaskRunner {
  constructor(private readonly host: TaskHost) {}

  private taskEnv(
    rec: AllocRecord,
    job: Json,
    tg: Json,
    task: Json,
    taskDir: string,
  ): { env: Record<string, string>; interpolate: (s: string) => string } {
    const a = rec.alloc;
    const env: Record<string, string> = {
      NOMAD_ALLOC_DIR: join(rec.dir, 'alloc'),
      NOMAD_TASK_DIR: join(taskDir, 'local'),
      NOMAD_SECRETS_DIR: join(taskDir, 'secrets'),
      NOMAD_ALLOC_ID: a.ID,
      NOMAD_SHORT_ALLOC_ID: a.ID.slice(0, 8),
      NOMAD_ALLOC_NAME: a.Name,
      NOMAD_ALLOC_INDEX: a.Name.replace(/^.*\[(\d+)\]$/, '$1'),
      NOMAD_JOB_ID: job.ID,
      NOMAD_JOB_NAME: job.Name,
      NOMAD_GROUP_NAME: tg.Name,
      NOMAD_TASK_NAME: task.Name,
      NOMAD_NAMESPACE: job.Namespace,
      NOMAD_REGION: this.host.region,
      NOMAD_DC: this.host.datacenter,
      NOMAD_CPU_LIMIT: String(task.Resources?.CPU ?? 100),
      NOMAD_CPU_CORES: task.Resources?.Cores ? String(task.Resources.Cores) : '',
      NOMAD_MEMORY_LIMIT: String(task.Resources?.MemoryMB ?? 300),
    };
    for (const p of a.AllocatedResources.Shared.Ports as Json[]) {
      const port = String(p.To || p.Value);
      Object.assign(env, {
        [`NOMAD_PORT_${p.Label}`]: port,
        [`NOMAD_HOST_PORT_${p.Label}`]: String(p.Value),
        [`NOMAD_IP_${p.Label}`]: p.HostIP,
        [`NOMAD_HOST_IP_${p.Label}`]: p.HostIP,
        [`NOMAD_ADDR_${p.Label}`]: `${p.HostIP}:${port}`,
        [`NOMAD_HOST_ADDR_${p.Label}`]: `${p.HostIP}:${p.Value}`,
      });
    }
    const meta = { ...job.Meta, ...tg.Meta, ...task.Meta } as Record<string, string>;
    for (const [k, v] of Object.entries(meta)) {
      env[`NOMAD_META_${k}`] = v;
      env[`NOMAD_META_${k.toUpperCase()}`] = v;
    }
    const interpolate = (s: string) =>
      s.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
        if (name in env) return env[name];
        if (name.startsWith('meta.') && name.slice(5) in meta) return meta[name.slice(5)];
        if (name === 'node.unique.id') return this.host.nodeId;
        if (name === 'node.unique.name') return this.host.nodeName;
        if (name === 'node.datacenter') return this.host.datacenter;
        if (name === 'node.region') return this.host.region;
        return whole; // Nomad leaves what it cannot resolve
      });
    const taskEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries((task.Env ?? {}) as Record<string, string>))
      taskEnv[k] = interpolate(String(v));
    return { env: { ...env, ...taskEnv }, interpolate };
  }

  startTasks(rec: AllocRecord, job: Json, tg: Json): void {
    if (this.host.closed || rec.alloc.DesiredStatus !== 'run') {
      if (!this.host.closed) this.finishUnstarted(rec);
      return;
    }
    mkdirSync(join(rec.dir, 'alloc', 'logs'), { recursive: true });
    for (const task of tg.Tasks as Json[]) {
      const state = rec.alloc.TaskStates[task.Name];
      const taskDir = join(rec.dir, task.Name);
      mkdirSync(join(taskDir, 'local'), { recursive: true });
      mkdirSync(join(taskDir, 'secrets'), { recursive: true });
      state.Events.push(
        taskEvent('Task Setup', 'Building Task Directory', { Message: 'Building Task Directory' }),
      );
      const { env: full, interpolate } = this.taskEnv(rec, job, tg, task, taskDir);
      const run: TaskRun = {
        name: task.Name,
        proc: null,
        killing: false,
        oom: false,
        killTimer: null,
      };
      rec.runs.set(task.Name, run);
      const out = openSync(join(rec.dir, 'alloc', 'logs', `${task.Name}.stdout.0`), 'a');
      const err = openSync(join(rec.dir, 'alloc', 'logs', `${task.Name}.stderr.0`), 'a');
      let proc: ChildProcess;
      try {
        proc = spawn(
          interpolate(task.Config.command),
          ((task.Config.args ?? []) as string[]).map(interpolate),
          {
            cwd: taskDir,
            env: { ...process.env, ...full } as NodeJS.ProcessEnv, // raw_exec passes the client's environment on
            stdio: ['ignore', out, err],
            detached: true, // own process group, so kills reach the whole tree
          },
        );
      } finally {
        closeSync(out);
        closeSync(err);
      }
      run.proc = proc;
      proc.once('spawn', () => {
        state.State = 'running';
        state.StartedAt = iso();
        state.Events.push(taskEvent('Started', 'Task started by client'));
        if (
          [...Object.values(rec.alloc.TaskStates as Record<string, Json>)].every(
            (s) => s.State === 'running',
          )
        ) {
          rec.alloc.ClientStatus = 'running';
          rec.alloc.ClientDescription = 'Tasks are running';
        }
        this.host.touch(rec);
      });
      proc.once('error', (e) => {
        if (proc.pid !== undefined) return; // an error after spawn (e.g. kill failure) is not a launch failure
        state.Events.push(
          taskEvent('Driver Failure', `failed to launch command with executor: ${e.message}`, {
            DriverError: `failed to launch command with executor: ${e.message}`,
            FailsTask: true,
          }),
        );
        this.taskDead(rec, run, true);
      });
      proc.once('exit', (code, signal) => this.onExit(rec, run, code, signal));
    }
    this.host.touch(rec);
  }

  private finishUnstarted(rec: AllocRecord): void {
    for (const s of Object.values(rec.alloc.TaskStates as Record<string, Json>)) {
      s.State = 'dead';
      s.FinishedAt = iso();
    }
    rec.alloc.ClientStatus = 'complete';
    rec.alloc.ClientDescription = 'All tasks have completed';
    this.host.touch(rec);
  }

  private onExit(
    rec: AllocRecord,
    run: TaskRun,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    if (run.killTimer) clearTimeout(run.killTimer);
    const state = rec.alloc.TaskStates[run.name];
    const sig = signalNumber(signal);
    const exitCode = signal ? 128 + sig : (code ?? 0); // Nomad's executor: 128 + signal number
    const details: Record<string, string> = {
      exit_code: String(exitCode),
      signal: String(sig),
      oom_killed: String(run.oom),
    };
    const msg = `Exit Code: ${exitCode}${sig ? `, Signal: ${sig}` : ''}${run.oom ? ', OOM Killed' : ''}`;
    state.Events.push(
      taskEvent('Terminated', msg, {
        ExitCode: exitCode,
        Signal: sig,
        Details: details,
        Message: run.oom ? 'OOM Killed' : '',
      }),
    );
    if (run.killing) {
      state.Events.push(taskEvent('Killed', 'Task successfully killed'));
      this.taskDead(rec, run, false);
      return;
    }
    const failed = !(rec.alloc.JobType === 'batch' && exitCode === 0);
    if (failed)
      state.Events.push(
        taskEvent(
          'Not Restarting',
          'Exceeded allowed attempts 0 in interval 0s and mode is "fail"',
          {
            FailsTask: true,
            RestartReason: 'Exceeded allowed attempts 0 in interval 0s and mode is "fail"',
          },
        ),
      );
    this.taskDead(rec, run, failed);
  }

  private taskDead(rec: AllocRecord, run: TaskRun, failed: boolean): void {
    const state = rec.alloc.TaskStates[run.name];
    state.State = 'dead';
    state.Failed = failed;
    state.FinishedAt = iso();
    run.proc = null;
    if (failed) {
      for (const other of rec.runs.values()) {
        if (other !== run && other.proc && !other.killing) {
          rec.alloc.TaskStates[other.name].Events.push(
            taskEvent('Sibling Task Failed', `Task's sibling "${run.name}" failed`, {
              FailedSibling: run.name,
            }),
          );
          this.kill(rec, other);
        }
      }
    }
    const states = Object.values(rec.alloc.TaskStates as Record<string, Json>);
    if (states.every((s) => s.State === 'dead')) {
      rec.alloc.ClientStatus = states.some((s) => s.Failed) ? 'failed' : 'complete';
      rec.alloc.ClientDescription =
        rec.alloc.ClientStatus === 'failed' ? 'Failed tasks' : 'All tasks have completed';
    }
    this.host.touch(rec);
  }

  kill(rec: AllocRecord, run: TaskRun): void {
    const proc = run.proc;
    if (!proc || proc.pid === undefined || run.killing) return;
    run.killing = true;
    const task =
      (rec.alloc.Job.TaskGroups as Json[])
        .find((g) => g.Name === rec.alloc.TaskGroup)
        ?.Tasks.find((t: Json) => t.Name === run.name) ?? {};
    const signal = (task.KillSignal || 'SIGINT') as NodeJS.Signals;
    const timeoutMs = Math.round((task.KillTimeout ?? 5_000_000_000) / 1e6);
    rec.alloc.TaskStates[run.name].Events.push(
      taskEvent('Killing', `Sent interrupt. Waiting ${timeoutMs / 1000}s before force killing`, {
        KillTimeout: timeoutMs * 1e6,
      }),
    );
    this.host.touch(rec);
    const pid = proc.pid;
    const send = (sig: NodeJS.Signals) => {
      try {
        process.kill(-pid, sig);
      } catch {
        /* already gone */
      }
    };
    send(signal);
    run.killTimer = setTimeout(() => send('SIGKILL'), timeoutMs);
  }

  /** Test hook: what Nomad reports when the kernel OOM-kills a task (SIGKILL, exit 137, oom_killed). */
  simulateOom(allocId: string, task?: string): void {
    const rec = this.host.allocs.get(allocId);
    if (!rec) throw new Error(`no allocation ${allocId}`);
    for (const run of rec.runs.values()) {
      if ((task && run.name !== task) || !run.proc?.pid) continue;
      run.oom = true;
      try {
        process.kill(-run.proc.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }

  pid(allocId: string, task?: string): number | undefined {
    const rec = this.host.allocs.get(allocId);
    for (const run of rec?.runs.values() ?? [])
      if (!task || run.name === task) return run.proc?.pid;
    return undefined;
  }

  logPath(allocId: string, task: string, type: string): string {
    const rec = this.host.allocs.get(allocId);
    if (!rec) throw new FakeError(404, `Unknown allocation "${allocId}"`);
    if (!rec.alloc.TaskStates[task]) throw new FakeError(400, `unknown task name "${task}"`);
    return join(rec.dir, 'alloc', 'logs', `${task}.${type}.0`);
  }

  /** SIGKILLs every running task (the fake is closing). */
  async killAll(): Promise<void> {
    const exits: Promise<unknown>[] = [];
    for (const rec of this.host.allocs.values()) {
      for (const run of rec.runs.values()) {
        const proc = run.proc;
        if (!proc?.pid) continue;
        if (run.killTimer) clearTimeout(run.killTimer);
        exits.push(
          new Promise((r) => {
            proc.once('exit', r);
            setTimeout(r, 2000);
          }),
        );
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    await Promise.all(exits);
  }
}
