/**
 * The sandbox job: one Nomad job per session, rendered to the JSON the jobs API takes.
 * `nomad/templates/sandbox.hcl` is the same job in HCL, for operators to read, `nomad job plan`
 * or run by hand; nomad/test/client.test.ts checks that the two keep the same shape.
 *
 * Shape: a `batch` job (a sandbox is not restarted or rescheduled: if it dies, the session's
 * sandbox goes cold and the next turn starts a new one from the latest snapshot), one group, one
 * task running the agent command, a dynamic host port labelled `agent` the agent listens on, and
 * resources from the instance size. Task driver: `raw_exec` by default, where the command
 * isolates itself (core's nomadAgentCommand wraps the agent in bubblewrap, as the local driver
 * does; raw_exec must be enabled on the clients); `exec` (Nomad's chroot + cgroups) is
 * selectable, but then the chroot must provide the sandbox layout (/workspace, …).
 *
 * CPU: Nomad's `cpu` is in MHz: a node offers cores × per-core clock (its `cpu.frequency`
 * attribute; e.g. 8 cores at 2.5 GHz = 20 000 MHz), and a task's MHz are a share of that. So
 * one vCPU = one core's clock: `CPU = cpus × cpuMhzPerCore` (default 2000 MHz per vCPU; set it
 * to your nodes' clock). MHz are a weighted share, not a hard cap; `cpuMode: 'cores'` instead
 * reserves whole cores (`cores = cpus`, an exclusive cpuset).
 *
 * Memory: `MemoryMB` and `MemoryMaxMB` are both the size's memory (a reservation AND a ceiling:
 * no oversubscription beyond the instance size). Disk: the group's ephemeral disk is the size's
 * disk. Processes: neither `raw_exec` nor `exec` has a pids option (only Docker's `pids_limit`),
 * so the job carries none; see the README for what Nomad does and does not enforce per driver.
 *
 * Environment: the task gets only what the launcher needs (AGENTFLEET_AGENT_LISTEN, _TOKEN,
 * _SESSION_ID, which it does not pass on) and the operator's `env`. The sandbox's own variables
 * (the spec's env, the proxy) are NOT task variables: the agent command hands them to bubblewrap
 * (`--setenv` through a pipe) or to the launcher (`--env`), and the launcher starts the sandbox
 * with exactly those, never with the task's environment (raw_exec may pass the client's on).
 * base_image (the environment's, on the spec): the task runs that image with the `docker` task
 * driver instead: `image` = base_image; the node binary, the launcher and the agent are host files
 * on the client bound read-only into the container (`dockerMounts`, Nomad's docker `mount` of
 * type bind: the client's docker plugin needs `volumes { enabled = true }`); the agent port is
 * published (`ports = ["agent"]`) and the launcher listens on 0.0.0.0 inside the container;
 * `pids_limit` is the size's process cap (Docker has one), `cap_drop = ["ALL"]` and
 * `no-new-privileges`. What this does NOT do: confine the container's network to the proxy (it
 * has Docker's bridge network; HTTP(S)_PROXY points at the session proxy, but only the operator's
 * firewall on the clients' docker bridge stops a direct connection), nor a disk quota.
 * Tested: nomad/test/jobTemplate.test.ts ("sandbox job template", the docker task included),
 * core/test/sandbox.nomad.test.ts, test/e2e/environments/base-image.test.ts (the submitted docker job, against the Nomad fake: it has no docker
 * driver, so the job is refused at placement as a client without docker would refuse it).
 */
import { INSTANCE_SIZES, type InstanceSize } from '@agentfleet/schemas';
import type { Job, Task } from './types.js';

export interface SandboxResources {
  cpus: number;
  memoryMb: number;
  diskMb: number;
  /** Process cap: Docker's `pids_limit` (raw_exec/exec have none; the launcher enforces it there). */
  processes?: number;
}

/** The instance sizes of the spec's limits, defined once in the contracts package. */
export const SANDBOX_SIZES: Record<InstanceSize, SandboxResources> = INSTANCE_SIZES;

/** What a sandbox is started for (structurally core's SandboxSpec). */
export interface SandboxJobSpec {
  tenantId: string;
  sessionId: string;
  environmentId: string;
  size: string;
  env: Record<string, string>;
  proxyUrl: string | null;
  /** The environment's image: run with the docker task driver. Null or absent: the host's. */
  baseImage?: string | null;
}

/** A host file or directory on the Nomad client, bound read-only into a docker task. */
export interface DockerMount {
  source: string;
  target: string;
}

export interface JobTemplateOptions {
  /** The agent's command and arguments; Nomad interpolates `${NOMAD_*}` in them at run time. */
  agentCommand: string[];
  jobId?: string;
  namespace?: string;
  region?: string;
  /** Default ["*"] (every datacenter). */
  datacenters?: string[];
  nodePool?: string;
  /** Default "raw_exec"; a spec with a base_image always runs with "docker". */
  driver?: 'exec' | 'raw_exec';
  /** For a base_image: host files bound read-only into the container (node, launcher, agent). */
  dockerMounts?: DockerMount[];
  /** Unix user the task runs as (exec/raw_exec `user`). */
  user?: string;
  /** Default "mhz" (CPU = cpus × cpuMhzPerCore); "cores" reserves whole cores. */
  cpuMode?: 'mhz' | 'cores';
  /** Default 2000. */
  cpuMhzPerCore?: number;
  /** Size table; default SANDBOX_SIZES. */
  sizes?: Record<string, SandboxResources>;
  /** Sent to the agent as AGENTFLEET_AGENT_TOKEN; the client must present it. */
  agentToken?: string;
  /** Extra task environment for the launcher (not passed into the sandbox). */
  env?: Record<string, string>;
  /** Time between the kill signal and SIGKILL; default 10 s. */
  killTimeoutMs?: number;
  /** Extra job meta. */
  meta?: Record<string, string>;
  priority?: number;
}

export const AGENT_PORT_LABEL = 'agent';
export const SANDBOX_GROUP = 'sandbox';
export const SANDBOX_TASK = 'agent';
const NS = 1_000_000;

/** A job ID Nomad accepts (no spaces or slashes; ≤ 128 characters), stable per session. */
export function sandboxJobId(sessionId: string): string {
  return `sandbox-${sessionId.replace(/[^A-Za-z0-9_.-]/g, '-')}`.slice(0, 128);
}

export function sandboxResources(
  size: string,
  sizes: Record<string, SandboxResources> = SANDBOX_SIZES,
): SandboxResources {
  const r = sizes[size];
  if (!r)
    throw new Error(
      `unknown instance size ${JSON.stringify(size)} (expected one of ${Object.keys(sizes).join(', ')})`,
    );
  return r;
}

/** The docker task driver's config for a base_image (see the file header for what it confines). */
function dockerConfig(
  image: string,
  command: string,
  args: string[],
  res: SandboxResources,
  mounts: DockerMount[],
): Record<string, unknown> {
  return {
    image,
    command,
    args,
    ports: [AGENT_PORT_LABEL],
    mount: mounts.map((m) => ({
      type: 'bind',
      source: m.source,
      target: m.target,
      readonly: true,
    })),
    ...(res.processes ? { pids_limit: res.processes } : {}),
    cap_drop: ['ALL'],
    security_opt: ['no-new-privileges'],
  };
}

export function jobTemplate(spec: SandboxJobSpec, opts: JobTemplateOptions): Job {
  if (opts.agentCommand.length === 0) throw new Error('agentCommand is empty');
  const res = sandboxResources(spec.size, opts.sizes);
  const image = spec.baseImage ?? null;
  const driver = image ? 'docker' : (opts.driver ?? 'raw_exec');
  const cpuMode = opts.cpuMode ?? 'mhz';
  const meta: Record<string, string> = {
    ...opts.meta,
    tenant_id: spec.tenantId,
    session_id: spec.sessionId,
    environment_id: spec.environmentId,
    instance_size: spec.size,
    ...(image ? { base_image: image } : {}),
  };
  const env: Record<string, string> = {
    ...opts.env,
    // In a container the host's address is not bound: listen on every interface of its own.
    AGENTFLEET_AGENT_LISTEN: `${image ? '0.0.0.0' : `\${NOMAD_IP_${AGENT_PORT_LABEL}}`}:\${NOMAD_PORT_${AGENT_PORT_LABEL}}`,
    AGENTFLEET_SESSION_ID: spec.sessionId,
  };
  if (opts.agentToken) env.AGENTFLEET_AGENT_TOKEN = opts.agentToken;
  const [command, ...args] = opts.agentCommand;
  const task: Task = {
    Name: SANDBOX_TASK,
    Driver: driver,
    Config: image
      ? dockerConfig(image, command, args, res, opts.dockerMounts ?? [])
      : { command, args },
    Env: env,
    Resources: {
      ...(cpuMode === 'cores'
        ? { Cores: res.cpus }
        : { CPU: Math.round(res.cpus * (opts.cpuMhzPerCore ?? 2000)) }),
      MemoryMB: res.memoryMb,
      MemoryMaxMB: res.memoryMb,
    },
    KillSignal: 'SIGTERM',
    KillTimeout: (opts.killTimeoutMs ?? 10_000) * NS,
    LogConfig: { MaxFiles: 2, MaxFileSizeMB: 10 },
    Meta: null,
  };
  if (opts.user) task.User = opts.user;
  const job: Job = {
    ID: opts.jobId ?? sandboxJobId(spec.sessionId),
    Name: opts.jobId ?? sandboxJobId(spec.sessionId),
    Type: 'batch',
    Priority: opts.priority ?? 50,
    Datacenters: opts.datacenters ?? ['*'],
    Meta: meta,
    TaskGroups: [
      {
        Name: SANDBOX_GROUP,
        Count: 1,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: AGENT_PORT_LABEL }] }],
        RestartPolicy: { Attempts: 0, Mode: 'fail' },
        ReschedulePolicy: { Attempts: 0, Unlimited: false },
        EphemeralDisk: { SizeMB: res.diskMb, Sticky: false, Migrate: false },
        Tasks: [task],
      },
    ],
  };
  if (opts.namespace) job.Namespace = opts.namespace;
  if (opts.region) job.Region = opts.region;
  if (opts.nodePool) job.NodePool = opts.nodePool;
  return job;
}
