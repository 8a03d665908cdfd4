/**
 * Minimal typed shapes of the Nomad HTTP API objects this project uses. Field names are Nomad's
 * (PascalCase JSON). Only the fields we read or write are typed; Nomad returns many more, and
 * every object keeps an index signature so nothing is lost when passed through.
 * Reference: https://developer.hashicorp.com/nomad/api-docs (jobs, allocations, evaluations).
 */

/** Durations in job JSON are nanoseconds. */
export type Nanoseconds = number;

export interface Port {
  Label: string;
  /** 0 (or absent) for a dynamic port in a job; the assigned port in an allocation. */
  Value?: number;
  /** The port inside the task's network namespace (bridge mode); 0 = same as Value. */
  To?: number;
  HostNetwork?: string;
}

export interface NetworkResource {
  /** "host" (default), "bridge", "cni/<name>", "none". */
  Mode?: string;
  Device?: string;
  CIDR?: string;
  IP?: string;
  MBits?: number;
  ReservedPorts?: Port[] | null;
  DynamicPorts?: Port[] | null;
  [extra: string]: unknown;
}

export interface Resources {
  /** MHz. */
  CPU?: number;
  /** Whole reserved cores (alternative to CPU). */
  Cores?: number;
  MemoryMB?: number;
  /** Memory oversubscription ceiling (needs the scheduler option enabled). */
  MemoryMaxMB?: number;
  DiskMB?: number;
  Networks?: NetworkResource[] | null;
  [extra: string]: unknown;
}

export interface RestartPolicy {
  Attempts?: number;
  Interval?: Nanoseconds;
  Delay?: Nanoseconds;
  Mode?: 'fail' | 'delay';
}

export interface ReschedulePolicy {
  Attempts?: number;
  Interval?: Nanoseconds;
  Delay?: Nanoseconds;
  DelayFunction?: string;
  MaxDelay?: Nanoseconds;
  Unlimited?: boolean;
}

export interface Task {
  Name: string;
  /** "raw_exec", "exec", "docker", ... */
  Driver: string;
  User?: string;
  /** Driver config; for raw_exec/exec: { command: string, args?: string[] }. */
  Config?: Record<string, unknown>;
  Env?: Record<string, string> | null;
  Resources?: Resources;
  Meta?: Record<string, string> | null;
  KillTimeout?: Nanoseconds;
  KillSignal?: string;
  LogConfig?: { MaxFiles?: number; MaxFileSizeMB?: number; Disabled?: boolean };
  [extra: string]: unknown;
}

export interface TaskGroup {
  Name: string;
  Count?: number;
  Tasks: Task[];
  Networks?: NetworkResource[] | null;
  RestartPolicy?: RestartPolicy;
  ReschedulePolicy?: ReschedulePolicy;
  EphemeralDisk?: { SizeMB?: number; Sticky?: boolean; Migrate?: boolean };
  Meta?: Record<string, string> | null;
  [extra: string]: unknown;
}

export interface Constraint {
  LTarget?: string;
  RTarget?: string;
  Operand: string;
}

export interface Job {
  ID: string;
  Name?: string;
  Namespace?: string;
  Region?: string;
  Type?: 'service' | 'batch' | 'system' | 'sysbatch';
  Priority?: number;
  Datacenters?: string[];
  NodePool?: string;
  Constraints?: Constraint[] | null;
  TaskGroups: TaskGroup[];
  Meta?: Record<string, string> | null;
  /** Read-only fields Nomad fills in. */
  Status?: 'pending' | 'running' | 'dead';
  StatusDescription?: string;
  Stop?: boolean;
  Version?: number;
  SubmitTime?: number;
  CreateIndex?: number;
  ModifyIndex?: number;
  JobModifyIndex?: number;
  [extra: string]: unknown;
}

export interface JobRegisterResponse {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  Warnings?: string;
  [extra: string]: unknown;
}

export interface JobDeregisterResponse {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  [extra: string]: unknown;
}

export interface TaskEvent {
  /** "Received", "Task Setup", "Started", "Terminated", "Killing", "Killed", "Driver Failure", "Not Restarting", ... */
  Type: string;
  /** Unix nanoseconds. */
  Time: number;
  ExitCode?: number;
  /** Signal number that ended the process (0 = none). */
  Signal?: number;
  Message?: string;
  DisplayMessage?: string;
  DriverError?: string;
  SetupError?: string;
  KillReason?: string;
  FailsTask?: boolean;
  /** String-valued details, e.g. { exit_code: "137", signal: "9", oom_killed: "true" }. */
  Details?: Record<string, string> | null;
  [extra: string]: unknown;
}

export interface TaskState {
  State: 'pending' | 'running' | 'dead';
  Failed: boolean;
  Restarts?: number;
  StartedAt?: string | null;
  FinishedAt?: string | null;
  LastRestart?: string | null;
  Events: TaskEvent[] | null;
  [extra: string]: unknown;
}

export interface PortMapping {
  Label: string;
  Value: number;
  To?: number;
  HostIP?: string;
}

export interface AllocatedResources {
  Tasks?: Record<
    string,
    {
      Cpu?: { CpuShares?: number; ReservedCores?: number[] | null };
      Memory?: { MemoryMB?: number; MemoryMaxMB?: number };
      Networks?: NetworkResource[] | null;
      [extra: string]: unknown;
    }
  >;
  Shared?: {
    DiskMB?: number;
    Networks?: NetworkResource[] | null;
    Ports?: PortMapping[] | null;
  };
}

export interface AllocNetworkStatus {
  InterfaceName?: string;
  Address?: string;
  AddressIPv6?: string;
  DNS?: unknown;
}

export type AllocClientStatus = 'pending' | 'running' | 'complete' | 'failed' | 'lost' | 'unknown';
export type AllocDesiredStatus = 'run' | 'stop' | 'evict';

/** What list endpoints return (no Job; AllocatedResources only with `resources=true`). */
export interface AllocationListStub {
  ID: string;
  EvalID?: string;
  Name?: string;
  Namespace?: string;
  NodeID?: string;
  NodeName?: string;
  JobID: string;
  JobType?: string;
  JobVersion?: number;
  TaskGroup: string;
  DesiredStatus: AllocDesiredStatus;
  DesiredDescription?: string;
  ClientStatus: AllocClientStatus;
  ClientDescription?: string;
  TaskStates?: Record<string, TaskState> | null;
  AllocatedResources?: AllocatedResources | null;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime?: number;
  ModifyTime?: number;
  [extra: string]: unknown;
}

export interface Allocation extends AllocationListStub {
  Job?: Job;
  AllocatedResources?: AllocatedResources | null;
  /** Set in bridge/CNI network modes; absent or empty in host mode. */
  NetworkStatus?: AllocNetworkStatus | null;
  AllocModifyIndex?: number;
}

export interface Evaluation {
  ID: string;
  Namespace?: string;
  Priority?: number;
  Type?: string;
  TriggeredBy?: string;
  JobID?: string;
  /** "pending", "complete", "failed", "blocked", "canceled". */
  Status: string;
  StatusDescription?: string;
  BlockedEval?: string;
  NextEval?: string;
  PreviousEval?: string;
  /** Per task group, why placement failed (e.g. exhausted dimensions, filtered constraints). */
  FailedTGAllocs?: Record<string, AllocationMetric> | null;
  QueuedAllocations?: Record<string, number> | null;
  CreateIndex?: number;
  ModifyIndex?: number;
  [extra: string]: unknown;
}

export interface AllocationMetric {
  NodesEvaluated?: number;
  NodesFiltered?: number;
  NodesAvailable?: Record<string, number> | null;
  NodesExhausted?: number;
  ClassFiltered?: Record<string, number> | null;
  ConstraintFiltered?: Record<string, number> | null;
  ClassExhausted?: Record<string, number> | null;
  DimensionExhausted?: Record<string, number> | null;
  CoalescedFailures?: number;
  [extra: string]: unknown;
}

/** Terminal client statuses: the allocation will not run again. */
export const TERMINAL_CLIENT_STATUSES: ReadonlySet<AllocClientStatus> = new Set([
  'complete',
  'failed',
  'lost',
]);
