/**
 * Stored shapes of deployments and their runs (collections `deployments`, `deployment_runs`,
 * declared in core/src/store/collections.ts).
 */
import type {
  DeploymentInitialEvent,
  DeploymentRunErrorType,
  ScheduleParams,
} from '@agentfleet/schemas';

export interface DeploymentDoc {
  _id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  /** Always pinned: an agent id without a version pins the version current at create/update. */
  agent: { id: string; version: number };
  environment_id: string;
  initial_events: DeploymentInitialEvent[];
  metadata: Record<string, string>;
  resources: Array<{ type: 'file'; file_id: string; mount_path?: string | null }>;
  vault_ids: string[];
  budget: unknown | null;
  schedule: Omit<ScheduleParams, 'type'> | null;
  /**
   * Scheduled minutes at or before this instant never fire: set when the schedule starts
   * counting (create, unpause, schedule change), so nothing missed before it is backfilled.
   */
  schedule_from: string;
  /** Newest scheduled minute claimed (a run exists for it); the scheduler skips older ones. */
  last_scheduled_at: string | null;
  /** When the most recent scheduled run started (SDK schedule.last_run_at). */
  last_run_at: string | null;
  paused_reason:
    { type: 'manual' } | { type: 'error'; error: { type: DeploymentRunErrorType } } | null;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeploymentRunDoc {
  _id: string;
  tenant_id: string;
  deployment_id: string;
  agent: { id: string; version: number };
  trigger_context: { type: 'schedule'; scheduled_at: string } | { type: 'manual' };
  /** `firing` while the session is being created (not served); `done` once the outcome is recorded. */
  state: 'firing' | 'done';
  session_id: string | null;
  error: { type: DeploymentRunErrorType; message: string } | null;
  created_at: string;
}
