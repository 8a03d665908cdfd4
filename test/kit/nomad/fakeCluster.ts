/**
 * The state machine behind the Nomad API fake (see fake.ts): one region, one client node, jobs,
 * evaluations and allocations with Nomad's indexes, and tasks run on THIS machine as child
 * processes with raw_exec semantics (no isolation, whatever the job's driver says).
 *
 * Followed from Nomad's documentation: register creates an evaluation that places `Count`
 * allocations per task group (or records FailedTGAllocs and a blocked eval when the driver is
 * missing, no datacenter matches or the node's CPU/memory is exhausted); allocations go
 * pending → running → complete/failed with TaskStates events (Received, Task Setup, Started,
 * Terminated with ExitCode/Signal (128+n when killed by signal n, as Nomad's executor reports),
 * Killing, Killed, Not Restarting, Driver Failure, Sibling Task Failed); stop sets DesiredStatus
 * "stop" and kills with the task's kill_signal, then SIGKILL after kill_timeout; purge removes
 * the job (its allocations and evaluations stay until GC, which the fake never runs).
 *
 * Not modelled: restarts and rescheduling (a task that exits is dead: restart attempts are
 * always 0), blocked evaluations never unblock, deployments, services, templates, artifacts,
 * volumes, users, multiple nodes; bridge/CNI networking (ports are host ports on 127.0.0.1).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { FakeError, FakeTaskRunner, nowNs, type AllocRecord, type Json } from './fakeTasks.js';
import { allocNetworks, buildAlloc, globMatch } from './fakePlacement.js';

export { FakeError };

export interface FakeNodeOptions {
  /** Total CPU in MHz the node offers; default cores × 2000. */
  cpuMhz?: number;
  cores?: number;
  memoryMb?: number;
  datacenter?: string;
}

const TERMINAL = new Set(['complete', 'failed', 'lost']);
const RUNNABLE_DRIVERS = new Set(['raw_exec', 'exec']);

export class FakeCluster extends EventEmitter {
  index = 1;
  readonly tables = { jobs: 1, allocs: 1, evals: 1 };
  readonly jobs = new Map<string, Json>(); // `${namespace}\0${id}`
  readonly allocs = new Map<string, AllocRecord>();
  readonly evals = new Map<string, Json>();
  readonly nodeId = randomUUID();
  readonly nodeName = 'fake-nomad-node';
  readonly datacenter: string;
  readonly capacity: { cpu: number; cores: number; memory: number };
  private readonly root = join(tmpdir(), `nomad-fake-${process.pid}-${randomUUID().slice(0, 8)}`);
  closed = false;
  private readonly tasks = new FakeTaskRunner(this);

  constructor(
    readonly region: string,
    readonly namespaces: Set<string>,
    node: FakeNodeOptions = {},
  ) {
    super();
    this.setMaxListeners(0);
    const cores = node.cores ?? cpus().length;
    this.capacity = {
      cores,
      cpu: node.cpuMhz ?? cores * 2000,
      memory: node.memoryMb ?? Math.floor(totalmem() / 1048576),
    };
    this.datacenter = node.datacenter ?? 'dc1';
    mkdirSync(this.root, { recursive: true });
  }

  private emitQueued = false;

  /** A new raft index for `table`; waiters are woken once the current synchronous change is complete. */
  private bump(table: keyof FakeCluster['tables']): number {
    this.index += 1;
    this.tables[table] = this.index;
    if (!this.emitQueued) {
      this.emitQueued = true;
      queueMicrotask(() => {
        this.emitQueued = false;
        this.emit('change');
      });
    }
    return this.index;
  }

  jobKey = (ns: string, id: string) => `${ns}\0${id}`;

  getJob(ns: string, id: string): Json | undefined {
    return this.jobs.get(this.jobKey(ns, id));
  }

  // ---- jobs ---------------------------------------------------------------------------------

  register(job: Json, ns: string): Json {
    const problems: string[] = [];
    if (!job || typeof job !== 'object') throw new FakeError(400, 'Job must be specified');
    if (!job.ID || typeof job.ID !== 'string') problems.push('Missing job ID');
    else if (/\s|\//.test(job.ID)) problems.push('Job ID contains a space or slash');
    if (!Array.isArray(job.TaskGroups) || job.TaskGroups.length === 0)
      problems.push('Missing job task groups');
    for (const tg of job.TaskGroups ?? []) {
      if (!tg.Name) problems.push('Missing task group name');
      if (!Array.isArray(tg.Tasks) || tg.Tasks.length === 0)
        problems.push(`Task group ${tg.Name}: missing tasks`);
      for (const t of tg.Tasks ?? []) {
        if (!t.Name) problems.push(`Task group ${tg.Name}: missing task name`);
        if (!t.Driver) problems.push(`Task ${t.Name}: missing driver`);
        if (RUNNABLE_DRIVERS.has(t.Driver) && typeof t.Config?.command !== 'string')
          problems.push(`Task ${t.Name}: missing command for ${t.Driver} driver`);
      }
    }
    if (problems.length)
      throw new FakeError(
        400,
        `${problems.length} error${problems.length > 1 ? 's' : ''} occurred:\n${problems.map((p) => `\t* ${p}`).join('\n')}\n`,
      );
    if (!this.namespaces.has(ns))
      throw new FakeError(400, `job "${job.ID}" is in nonexistent namespace "${ns}"`);

    const key = this.jobKey(ns, job.ID);
    const prev = this.jobs.get(key);
    const spec = JSON.stringify(job.TaskGroups);
    const unchanged =
      prev &&
      !prev.Stop &&
      JSON.stringify(prev.TaskGroups) === spec &&
      JSON.stringify(prev.Meta ?? null) === JSON.stringify(job.Meta ?? null);
    const index = this.bump('jobs');
    const stored: Json = {
      ...structuredClone(job),
      Namespace: ns,
      Region: this.region,
      Name: job.Name || job.ID,
      Type: job.Type ?? 'service',
      Priority: job.Priority ?? 50,
      Datacenters: job.Datacenters ?? ['*'],
      Stop: false,
      Status: 'pending',
      StatusDescription: '',
      Version: prev ? (unchanged ? prev.Version : prev.Version + 1) : 0,
      SubmitTime: nowNs(),
      CreateIndex: prev?.CreateIndex ?? index,
      ModifyIndex: index,
      JobModifyIndex: unchanged ? prev.JobModifyIndex : index,
    };
    this.jobs.set(key, stored);
    const ev = this.createEval(stored, 'job-register');
    if (!unchanged) {
      for (const r of this.allocs.values())
        if (
          r.alloc.Namespace === ns &&
          r.alloc.JobID === job.ID &&
          !TERMINAL.has(r.alloc.ClientStatus)
        )
          this.stopAlloc(r, 'alloc not needed due to job update');
      void this.schedule(stored, ev);
    } else this.completeEval(ev, {});
    this.refreshJobStatus(stored);
    return {
      EvalID: ev.ID,
      EvalCreateIndex: ev.CreateIndex,
      JobModifyIndex: stored.JobModifyIndex,
      Warnings: '',
      Index: ev.CreateIndex,
      LastContact: 0,
      KnownLeader: true,
    };
  }

  deregister(ns: string, id: string, purge: boolean): Json {
    const key = this.jobKey(ns, id);
    const job = this.jobs.get(key);
    if (!job) throw new FakeError(404, 'job not found');
    const index = this.bump('jobs');
    if (purge) this.jobs.delete(key);
    else Object.assign(job, { Stop: true, ModifyIndex: index, JobModifyIndex: index });
    const ev = this.createEval(job, 'job-deregister');
    for (const r of this.allocs.values())
      if (r.alloc.Namespace === ns && r.alloc.JobID === id && r.alloc.DesiredStatus === 'run')
        this.stopAlloc(r, 'alloc is being stopped because job is stopped');
    this.completeEval(ev, {});
    if (!purge) this.refreshJobStatus(job);
    return {
      EvalID: ev.ID,
      EvalCreateIndex: ev.CreateIndex,
      JobModifyIndex: index,
      Index: index,
      LastContact: 0,
      KnownLeader: true,
    };
  }

  private refreshJobStatus(job: Json): void {
    if (this.jobs.get(this.jobKey(job.Namespace, job.ID)) !== job) return; // purged
    const allocs = [...this.allocs.values()].filter(
      (r) => r.alloc.Namespace === job.Namespace && r.alloc.JobID === job.ID,
    );
    const evalsPending = [...this.evals.values()].some(
      (e) => e.Namespace === job.Namespace && e.JobID === job.ID && e.Status === 'pending',
    );
    let status: string;
    if (allocs.some((r) => !TERMINAL.has(r.alloc.ClientStatus))) status = 'running';
    else if (evalsPending) status = 'pending';
    else if (job.Stop || (job.Type === 'batch' && allocs.length > 0)) status = 'dead';
    else status = 'pending';
    if (status !== job.Status) {
      job.Status = status;
      job.ModifyIndex = this.bump('jobs');
    }
  }

  // ---- evaluations and placement ------------------------------------------------------------

  private createEval(job: Json, triggeredBy: string, status = 'pending'): Json {
    const index = this.bump('evals');
    const ev = {
      ID: randomUUID(),
      Namespace: job.Namespace,
      Priority: job.Priority ?? 50,
      Type: job.Type ?? 'service',
      TriggeredBy: triggeredBy,
      JobID: job.ID,
      JobModifyIndex: job.JobModifyIndex,
      Status: status,
      StatusDescription: '',
      BlockedEval: '',
      NextEval: '',
      PreviousEval: '',
      FailedTGAllocs: null as Json,
      QueuedAllocations: null as Json,
      CreateIndex: index,
      ModifyIndex: index,
      CreateTime: nowNs(),
      ModifyTime: nowNs(),
    };
    this.evals.set(ev.ID, ev);
    return ev;
  }

  private completeEval(ev: Json, failed: Record<string, Json>): void {
    const hasFailures = Object.keys(failed).length > 0;
    if (hasFailures) {
      const job = {
        Namespace: ev.Namespace,
        ID: ev.JobID,
        Priority: ev.Priority,
        Type: ev.Type,
        JobModifyIndex: ev.JobModifyIndex,
      };
      const blocked = this.createEval(job, 'queued-allocs', 'blocked');
      blocked.PreviousEval = ev.ID;
      blocked.StatusDescription = 'created to place remaining allocations';
      ev.BlockedEval = blocked.ID;
    }
    Object.assign(ev, {
      Status: 'complete',
      FailedTGAllocs: hasFailures ? failed : null,
      ModifyIndex: this.bump('evals'),
      ModifyTime: nowNs(),
    });
  }

  private used(): { cpu: number; cores: number; memory: number } {
    const u = { cpu: 0, cores: 0, memory: 0 };
    for (const r of this.allocs.values()) {
      if (TERMINAL.has(r.alloc.ClientStatus)) continue;
      u.cpu += r.usage.cpu;
      u.cores += r.usage.cores;
      u.memory += r.usage.memory;
    }
    return u;
  }

  private async schedule(job: Json, ev: Json): Promise<void> {
    await new Promise((r) => setTimeout(r, 5)); // the scheduler runs asynchronously
    if (this.closed) return;
    const failed: Record<string, Json> = {};
    const dcOk = (job.Datacenters as string[]).some((d) => globMatch(d, this.datacenter));
    for (const tg of job.TaskGroups as Json[]) {
      const count = tg.Count ?? 1;
      const metric = (extra: Json) => ({
        NodesEvaluated: 1,
        NodesFiltered: 0,
        NodesAvailable: { [this.datacenter]: 1 },
        NodesExhausted: 0,
        ClassFiltered: null,
        ConstraintFiltered: null,
        ClassExhausted: null,
        DimensionExhausted: null,
        CoalescedFailures: count - 1,
        ...extra,
      });
      if (!dcOk) {
        failed[tg.Name] = metric({ NodesEvaluated: 0, NodesAvailable: {} });
        continue;
      }
      const missing = (tg.Tasks as Json[]).find((t) => !RUNNABLE_DRIVERS.has(t.Driver));
      if (missing) {
        failed[tg.Name] = metric({
          NodesFiltered: 1,
          ConstraintFiltered: { [`missing drivers`]: 1 },
        });
        continue;
      }
      const need = { cpu: 0, cores: 0, memory: 0 };
      for (const t of tg.Tasks as Json[]) {
        need.cores += t.Resources?.Cores ?? 0;
        need.cpu += t.Resources?.Cores ? 0 : (t.Resources?.CPU ?? 100);
        need.memory += t.Resources?.MemoryMB ?? 300;
      }
      for (let i = 0; i < count; i++) {
        const used = this.used();
        const exhausted =
          used.cores + need.cores > this.capacity.cores
            ? 'cores'
            : used.cpu + need.cpu > this.capacity.cpu
              ? 'cpu'
              : used.memory + need.memory > this.capacity.memory
                ? 'memory'
                : null;
        if (exhausted) {
          failed[tg.Name] = metric({
            NodesExhausted: 1,
            DimensionExhausted: { [exhausted]: 1 },
            CoalescedFailures: count - i - 1,
          });
          break;
        }
        await this.place(job, tg, i, ev, need);
        if (this.closed) return;
      }
    }
    this.completeEval(ev, failed);
    this.refreshJobStatus(job);
  }

  private async place(
    job: Json,
    tg: Json,
    i: number,
    ev: Json,
    need: AllocRecord['usage'],
  ): Promise<void> {
    const id = randomUUID();
    const network = await allocNetworks(tg);
    const index = this.bump('allocs');
    const alloc = buildAlloc({ id, job, tg, i, ev, index, node: this, network });
    const dir = join(this.root, id);
    const rec: AllocRecord = { alloc, dir, runs: new Map(), usage: need };
    this.allocs.set(id, rec);
    setTimeout(() => this.tasks.startTasks(rec, job, tg), 20); // the client picks the allocation up
  }

  // ---- allocations ----------------------------------------------------------------------------

  touch(rec: AllocRecord): void {
    rec.alloc.ModifyIndex = this.bump('allocs');
    rec.alloc.ModifyTime = nowNs();
    const job = this.getJob(rec.alloc.Namespace, rec.alloc.JobID);
    if (job) this.refreshJobStatus(job);
  }

  stopAlloc(rec: AllocRecord, why: string): void {
    rec.alloc.DesiredStatus = 'stop';
    rec.alloc.DesiredDescription = why;
    rec.alloc.AllocModifyIndex = this.index + 1;
    this.touch(rec);
    for (const run of rec.runs.values()) this.tasks.kill(rec, run);
  }

  simulateOom(allocId: string, task?: string): void {
    this.tasks.simulateOom(allocId, task);
  }

  pid(allocId: string, task?: string): number | undefined {
    return this.tasks.pid(allocId, task);
  }

  logPath(allocId: string, task: string, type: string): string {
    return this.tasks.logPath(allocId, task, type);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.tasks.killAll();
    this.emit('change');
    rmSync(this.root, { recursive: true, force: true });
  }
}
