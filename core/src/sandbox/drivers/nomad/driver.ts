/**
 * Nomad sandbox driver (port: core/src/sandbox/port.ts): one Nomad job per session (nomad/src/jobTemplate.ts), the sandbox
 * protocol over TCP to the task's dynamic port `agent` (the task runs the launcher of @agentfleet/sandbox-agent, which
 * relays to the sandbox agent; see command.ts for the command; transport.ts for the TCP connection).
 *
 * start: register the job → wait (blocking queries) for its evaluation (placement failures are
 * reported with Nomad's reasons) and for the allocation it placed to run (a task that fails to
 * start is reported with its events and stderr tail) → connect to the allocation's `agent`
 * address (AllocatedResources.Shared.Ports), authenticate with the per-sandbox token, wait for
 * the agent's `ready`. Anything failing purges the job.
 * exited: a blocking-query watch of the allocation until it is terminal; the code is the
 * `Terminated` event's ExitCode (137 when Nomad reports an OOM kill), the signal its Signal.
 * stop: deregister the job (Nomad sends the kill signal, SIGKILL after kill_timeout) and wait for
 * the allocation to end; destroy: the same with purge (the job is removed from Nomad).
 * base_image: the job runs that image with the docker task driver (`job.dockerMounts` bound into
 * it; without them a spec with a base_image is refused before anything is registered);
 * test/e2e/environments/base-image.test.ts.
 * proxy (option): the session's outbound proxy on TCP with its own Proxy-Authorization, given
 * to the job as the spec's proxyUrl (the launcher forwards the sandbox's proxy socket to it)
 * with the egress CA trust files for the agent command; released when the sandbox exits.
 * Proved against the Nomad fake by test/e2e/credentials/sandbox-credentials-nomad.test.ts.
 */
import { randomBytes } from 'node:crypto';
import {
  AGENT_PORT_LABEL,
  durationMs,
  jobTemplate,
  NomadClient,
  NomadError,
  SANDBOX_TASK,
  TERMINAL_CLIENT_STATUSES,
  type Allocation,
  type JobTemplateOptions,
  type NomadClientOptions,
} from '@agentfleet/nomad';
import type { Logger } from '../../../log.js';
import {
  INSTANCE_SIZES,
  type SandboxDriver,
  type SandboxHandle,
  type SandboxSpec,
} from '../../port.js';
import {
  checkSandboxSpec,
  sandboxResources,
  type SandboxLimitCaps,
  type SandboxTrust,
} from '../../shared.js';
import { sleep } from '../../../util.js';
import { createAgentClient, type AgentClient, type AgentClientOptions } from '../../protocol.js';
import { tcpTransport } from './transport.js';
import {
  agentAddress,
  allocationExit,
  describePlacementFailure,
  describeTaskFailure,
} from './allocation.js';

export { agentAddress, allocationExit } from './allocation.js';

export interface NomadDriverOptions {
  client: NomadClient | NomadClientOptions;
  /**
   * The task's command (see nomadAgentCommand), or a function of the spec (with the proxy's
   * proxyUrl set) and the egress CA trust files that come with the proxy.
   */
  agentCommand: string[] | ((spec: SandboxSpec, extra: { trust: SandboxTrust | null }) => string[]);
  /**
   * The session's outbound proxy for a sandbox on Nomad: a TCP URL the task reaches (with the
   * proxy's credentials in it), the egress CA trust files, and a release once the sandbox has
   * exited. Absent: the spec's proxyUrl, or no network at all.
   */
  proxy?: (
    spec: SandboxSpec,
  ) => Promise<{ url: string; trust: SandboxTrust | null; release: () => void }>;
  /** Passed to the job template: driver (default raw_exec), datacenters, nodePool, cpuMode, cpuMhzPerCore, user, killTimeoutMs, env, meta, priority. */
  job?: Omit<
    JobTemplateOptions,
    'agentCommand' | 'agentToken' | 'jobId' | 'namespace' | 'region' | 'sizes'
  >;
  /** Operator caps on every sandbox (SANDBOX_MAX_*): the job's resources are the size's under them. */
  limitCaps?: SandboxLimitCaps;
  /** Registration to a connected agent, placement and start included; default 120 s. */
  startTimeoutMs?: number;
  /** Longest hold of each blocking query; default "30s". */
  watchWait?: string | number;
  agentClient?: AgentClientOptions;
  /** Where to connect when the allocation's advertised address is not reachable as is. */
  resolveAddress?: (
    alloc: Allocation,
    port: { host: string; port: number },
  ) => { host: string; port: number };
  log?: Logger;
}

export interface NomadSandboxHandle extends SandboxHandle {
  readonly api: AgentClient;
  readonly jobId: string;
  readonly allocId: string;
  readonly address: { host: string; port: number };
  readonly spec: SandboxSpec;
}

export interface NomadDriver extends SandboxDriver {
  readonly name: 'nomad';
  readonly client: NomadClient;
  start(spec: SandboxSpec): Promise<NomadSandboxHandle>;
}

export function createNomadDriver(opts: NomadDriverOptions): NomadDriver {
  const client = opts.client instanceof NomadClient ? opts.client : new NomadClient(opts.client);
  const startTimeoutMs = opts.startTimeoutMs ?? 120_000;
  const wait = opts.watchWait ?? '30s';
  const log = opts.log;
  const running = new Map<string, NomadSandboxHandle>();
  const starting = new Set<string>();
  const aborter = new AbortController();
  let closed = false;

  const purge = (jobId: string) =>
    client.stopJob(jobId, { purge: true }).catch((err) => {
      if (!(err instanceof NomadError && err.status === 404))
        log?.warn('nomad: purging a sandbox job failed', { jobId, error: (err as Error).message });
    });

  /** Blocking options holding at most `wait`, and never past the deadline. */
  const hold = (index: number, deadline: number) =>
    index
      ? {
          index,
          wait: Math.max(1, Math.min(durationMs(wait), deadline - Date.now())),
          signal: aborter.signal,
        }
      : { signal: aborter.signal };

  /** Repeats the blocking query `fetch` until `done` holds for its data, or the deadline passes. */
  async function until<T>(
    fetch: (index: number) => Promise<{ data: T; index: number }>,
    done: (data: T) => boolean,
    deadline: number,
    what: string,
  ): Promise<T> {
    let index = 0;
    for (;;) {
      const r = await fetch(index);
      if (done(r.data)) return r.data;
      if (Date.now() >= deadline)
        throw new Error(`timed out after ${startTimeoutMs} ms waiting for ${what}`);
      // an index that went backwards (server restore) restarts from 0, as Nomad advises
      index = r.index < index ? 0 : r.index;
      if (index === 0) await sleep(100);
    }
  }

  async function waitForAllocation(
    jobId: string,
    evalId: string,
    deadline: number,
  ): Promise<Allocation> {
    const ev = await until(
      (index) => client.getEvaluation(evalId, hold(index, deadline)),
      (e) => e.Status !== 'pending',
      deadline,
      `evaluation ${evalId}`,
    );
    if (ev.Status !== 'complete' || Object.keys(ev.FailedTGAllocs ?? {}).length) {
      throw new Error(
        `Nomad could not place the sandbox job ${jobId} (evaluation ${ev.Status}${ev.StatusDescription ? `: ${ev.StatusDescription}` : ''}): ${describePlacementFailure(ev) || 'no reason given'}`,
      );
    }
    const stubs = await until(
      (index) => client.jobAllocations(jobId, hold(index, deadline)),
      (list) => list.some((a) => a.EvalID === evalId),
      deadline,
      `an allocation of ${jobId}`,
    );
    const allocId = stubs.find((a) => a.EvalID === evalId)!.ID;
    const alloc = await until(
      (index) => client.getAllocation(allocId, hold(index, deadline)),
      (a) => a.ClientStatus === 'running' || TERMINAL_CLIENT_STATUSES.has(a.ClientStatus),
      deadline,
      `allocation ${allocId} to run`,
    );
    if (alloc.ClientStatus !== 'running') throw await startFailure(jobId, alloc);
    return alloc;
  }

  /** Why the task did not come up: its last events and the tail of its stderr. */
  async function startFailure(jobId: string, alloc: Allocation): Promise<Error> {
    const stderr = await client
      .allocLogs(alloc.ID, SANDBOX_TASK, { type: 'stderr', origin: 'end', offset: 2000 })
      .catch(() => '');
    return new Error(
      `sandbox task of ${jobId} did not start (allocation ${alloc.ID} ${alloc.ClientStatus}): ${describeTaskFailure(alloc)}${stderr.trim() ? ` | stderr: ${stderr.trim()}` : ''}`,
    );
  }

  /** Connects, authenticates and waits for the agent's `ready`; retries while the port is not open yet. */
  async function connectAgent(
    address: { host: string; port: number },
    token: string,
    deadline: number,
    gone: () => boolean,
  ): Promise<AgentClient> {
    let lastError = 'no attempt';
    while (Date.now() < deadline && !gone()) {
      const transport = await tcpTransport({ ...address, token, reconnect: true }).catch(
        (err: Error) => {
          lastError = err.message;
          return null;
        },
      );
      if (!transport) {
        await sleep(100);
        continue;
      }
      const api = createAgentClient(transport, opts.agentClient);
      const outcome = await new Promise<'ready' | 'closed' | 'timeout'>((resolve) => {
        const timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
        api.onNotification((m) => {
          if (m === 'ready') {
            clearTimeout(timer);
            resolve('ready');
          }
        });
        transport.onClose(() => {
          clearTimeout(timer);
          resolve('closed');
        });
      });
      if (outcome === 'ready') return api;
      api.close();
      lastError =
        outcome === 'closed'
          ? 'the agent closed the connection (authentication failed or it exited)'
          : 'no ready notification';
      if (outcome === 'timeout') break;
      await sleep(100);
    }
    throw new Error(
      `could not reach the sandbox agent at ${address.host}:${address.port}: ${lastError}`,
    );
  }

  /** Watches the allocation until it is terminal (404: gone, e.g. garbage-collected). */
  async function watchExit(
    allocId: string,
    stopWatching: AbortSignal,
  ): Promise<{ code: number | null; signal: string | null }> {
    let index = 0;
    let failures = 0;
    for (;;) {
      if (stopWatching.aborted) return { code: null, signal: null };
      try {
        const r = await client.getAllocation(
          allocId,
          index ? { index, wait, signal: stopWatching } : { signal: stopWatching },
        );
        failures = 0;
        if (TERMINAL_CLIENT_STATUSES.has(r.data.ClientStatus)) return allocationExit(r.data);
        index = r.index < index ? 0 : r.index;
      } catch (err) {
        if (stopWatching.aborted) return { code: null, signal: null };
        if (err instanceof NomadError && err.status === 404) return { code: null, signal: null };
        failures += 1;
        log?.warn('nomad: watching a sandbox allocation failed; retrying', {
          allocId,
          error: (err as Error).message,
        });
        await sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)));
      }
    }
  }

  async function start(spec: SandboxSpec): Promise<NomadSandboxHandle> {
    if (closed) throw new Error('nomad sandbox driver is closed');
    checkSandboxSpec(spec);
    if (!INSTANCE_SIZES[spec.size]) throw new Error(`sandbox spec: unknown size '${spec.size}'`);
    if (running.has(spec.sessionId) || starting.has(spec.sessionId))
      throw new Error(`a sandbox for session ${spec.sessionId} is already running`);
    starting.add(spec.sessionId);
    try {
      const h = await startJob(spec);
      if (closed) {
        await h.destroy();
        throw new Error('nomad sandbox driver was closed while the sandbox started');
      }
      return h;
    } finally {
      starting.delete(spec.sessionId);
    }
  }

  /** With `opts.proxy`: the session's proxy for the job, released when the sandbox exits. */
  async function startJob(spec: SandboxSpec): Promise<NomadSandboxHandle> {
    const proxy = opts.proxy && !spec.proxyUrl ? await opts.proxy(spec) : null;
    try {
      const h = await startJobWith(spec, proxy ? { ...spec, proxyUrl: proxy.url } : spec, {
        trust: proxy?.trust ?? null,
      });
      if (proxy) void h.exited.then(() => proxy.release());
      return h;
    } catch (err) {
      proxy?.release();
      throw err;
    }
  }

  async function startJobWith(
    spec: SandboxSpec,
    runSpec: SandboxSpec,
    extra: { trust: SandboxTrust | null },
  ): Promise<NomadSandboxHandle> {
    // A base_image runs with the docker task driver, which needs the files to bind into it.
    if (spec.baseImage && !opts.job?.dockerMounts?.length)
      throw new Error(
        `base_image ${JSON.stringify(spec.baseImage)}: this Nomad driver runs no base images (SANDBOX_NOMAD_BASE_IMAGES is not set)`,
      );
    const deadline = Date.now() + startTimeoutMs;
    const token = randomBytes(24).toString('hex');
    const agentCommand =
      typeof opts.agentCommand === 'function'
        ? opts.agentCommand(runSpec, extra)
        : opts.agentCommand;
    const job = jobTemplate(runSpec, {
      driver: 'raw_exec',
      ...opts.job,
      agentCommand,
      agentToken: token,
      namespace: client.namespace,
      region: client.region,
      // the job reserves (and caps memory at) what the launcher enforces: the size under the operator's caps
      sizes: Object.fromEntries(
        Object.keys(INSTANCE_SIZES).map((size) => [size, sandboxResources(size, opts.limitCaps)]),
      ),
    });
    const jobId = job.ID;
    const reg = await client.registerJob(job);
    log?.debug('nomad: sandbox job registered', {
      jobId,
      evalId: reg.EvalID,
      sessionId: spec.sessionId,
    });
    let alloc: Allocation;
    let api: AgentClient;
    let address: { host: string; port: number };
    const watch = new AbortController();
    let exited!: Promise<{ code: number | null; signal: string | null }>;
    try {
      alloc = await waitForAllocation(jobId, reg.EvalID, deadline);
      const advertised = agentAddress(alloc);
      if (!advertised) throw new Error(`allocation ${alloc.ID} has no "${AGENT_PORT_LABEL}" port`);
      address = opts.resolveAddress ? opts.resolveAddress(alloc, advertised) : advertised;
      let gone = false;
      exited = watchExit(alloc.ID, AbortSignal.any([watch.signal, aborter.signal]));
      void exited.then(() => (gone = true));
      try {
        api = await connectAgent(address, token, deadline, () => gone);
      } catch (err) {
        if (!gone) throw err;
        throw await startFailure(jobId, (await client.getAllocation(alloc.ID)).data);
      }
    } catch (err) {
      watch.abort();
      await purge(jobId);
      throw new Error(`sandbox for session ${spec.sessionId}: ${(err as Error).message}`);
    }
    let stopping: Promise<void> | null = null;
    const terminate = (purgeJob: boolean) => async () => {
      const first = !stopping;
      stopping ??= (async () => {
        try {
          await client.stopJob(jobId, { purge: purgeJob });
        } catch (err) {
          if (!(err instanceof NomadError && err.status === 404)) throw err;
        }
      })();
      if (!first && purgeJob) await purge(jobId); // destroy after stop: purge too
      await stopping;
      const grace = (opts.job?.killTimeoutMs ?? 10_000) + 30_000;
      const outcome = await Promise.race([
        exited.then(() => 'exited' as const),
        sleep(grace).then(() => 'timeout' as const),
      ]);
      if (outcome === 'timeout') {
        log?.warn('nomad: sandbox allocation still not terminal after stop', {
          jobId,
          allocId: alloc.ID,
        });
        watch.abort();
      }
      api.close();
    };
    const handle: NomadSandboxHandle = {
      id: `nomad-${jobId}-${alloc.ID.slice(0, 8)}`,
      api,
      exited,
      jobId,
      allocId: alloc.ID,
      address,
      spec,
      stop: terminate(false),
      destroy: terminate(true),
    };
    running.set(spec.sessionId, handle);
    void exited.then((r) => {
      api.close();
      if (running.get(spec.sessionId) === handle) running.delete(spec.sessionId);
      log?.debug('nomad: sandbox exited', { jobId, allocId: alloc.ID, ...r });
    });
    log?.debug('nomad: sandbox started', {
      jobId,
      allocId: alloc.ID,
      address: `${address.host}:${address.port}`,
    });
    return handle;
  }

  return {
    name: 'nomad',
    client,
    start,
    async close() {
      closed = true;
      await Promise.all([...running.values()].map((h) => h.destroy().catch(() => {})));
      aborter.abort();
    },
  };
}
