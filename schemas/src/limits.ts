/**
 * Sandbox instance sizes of the spec's Limits: 1 vCPU/4 GB (default), 2/8, 4/16; 4 GB disk
 * (workspace, tmp, home and outputs together). `processes` caps the tasks (processes and threads)
 * a sandbox may hold at once, so that a fork bomb stays inside it.
 */
export type InstanceSize = 'small' | 'medium' | 'large';

export interface InstanceResources {
  cpus: number;
  memoryMb: number;
  diskMb: number;
  processes: number;
}

export const INSTANCE_SIZES: Record<InstanceSize, InstanceResources> = {
  small: { cpus: 1, memoryMb: 4096, diskMb: 4096, processes: 1024 },
  medium: { cpus: 2, memoryMb: 8192, diskMb: 4096, processes: 2048 },
  large: { cpus: 4, memoryMb: 16384, diskMb: 4096, processes: 4096 },
};
