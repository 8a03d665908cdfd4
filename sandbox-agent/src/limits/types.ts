/**
 * The types the confinement code needs, declared here so that the in-sandbox programs depend on
 * nothing: structurally the same as @agentfleet/schemas InstanceResources, core's Logger (warn
 * only) and core's SandboxLimitName (core's values are assignable to these).
 */
export interface SandboxResources {
  cpus: number;
  memoryMb: number;
  diskMb: number;
  processes: number;
}

export type SandboxLimitName = 'processes' | 'memory' | 'cpu' | 'disk';

/** Where confinement reports what it did (core's Logger satisfies it). */
export interface WarningLog {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** What reportingLimits needs of a sandbox client: its exec call. */
export interface ExecClient {
  exec(params: never): Promise<{ exitCode: number | null; stderr: string }>;
}
