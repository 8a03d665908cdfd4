/** Sessions and their run records as stored; the turn-state fields are written only by ./turnState.ts. */
import type { OutcomeState } from '../outcomes/records.js';
import type { AgentSpec } from '@agentfleet/schemas';
import type { PinnedSkill } from '../skills/records.js';
import type { EnvironmentDoc } from '../environments/records.js';
import type { ThreadLink } from '../threads/records.js';

export interface SessionAgentSnapshot extends AgentSpec {
  id: string;
  version: number;
  /** The skills pinned at session create, in order (./skills.ts); absent: none. */
  pinned_skills?: PinnedSkill[];
}

export type SessionEnvironmentSnapshot = Pick<
  EnvironmentDoc,
  'kind' | 'base_image' | 'packages' | 'network' | 'env'
> & { updated_at: string };

export interface SessionDoc {
  _id: string;
  tenant_id: string;
  agent_id: string;
  agent_version: number;
  agent: SessionAgentSnapshot;
  environment_id: string;
  /**
   * The environment as it was when the session was created: the sandbox's network policy, env
   * vars and packages come from here, never from the live environment (which may change or be
   * deleted). Absent on sessions stored before snapshots existed.
   */
  environment?: SessionEnvironmentSnapshot;
  title: string | null;
  metadata: Record<string, string>;
  resources: unknown[];
  /** Repository resource id → its authorization token sealed under the root secret (repositories/records.ts). */
  repository_tokens?: Record<string, string>;
  vault_ids: string[];
  budget: unknown | null;
  /** Outcomes by `outc_` id (core/src/outcomes/records.ts), served as `outcome_evaluations`. */
  outcomes?: Record<string, OutcomeState>;
  /** The deployment whose run created the session (core/src/deployments/firing.ts). */
  deployment_id?: string;
  /**
   * A coordinator session's roster (core/src/threads): each entry's agent snapshot, pinned at
   * create like `agent` (a `self` entry is `agent` without `multiagent`).
   */
  roster?: SessionAgentSnapshot[];
  /** A coordinator session: per child thread, the seq of its last reply delivered to the primary. */
  delivered?: Record<string, number>;
  /**
   * A coordinator session: the child threads' calls that wait for the client, cross-posted to
   * the primary's log (workers/src/turn/threads.ts): the copy's event id → the thread and the
   * call's own id, which the client's answer is routed to (core/src/threads/relay.ts).
   */
  relayed?: Record<string, { thread: string; id: string }>;
  /** Set on a child thread's document (core/src/threads/records.ts): the session it belongs to. */
  thread_of?: string;
  thread?: ThreadLink;
  /** Head of the event log (highest appended seq). */
  last_seq: number;
  /** Seq of the newest user input that asks for a turn. */
  input_seq: number;
  /** Seq up to which user input has been consumed by a turn. */
  processed_seq: number;
  /** Highest lease fencing token seen; appends with a lower token are refused. */
  fence: number;
  recoveries: number;
  /** Seq of the newest interrupt; a turn that started before it is aborted. */
  interrupt_seq?: number;
  /** Seq of the newest session.status_idle (set atomically with its append). */
  idle_seq?: number;
  /** True while user input awaits a turn (the recovery sweep scans it). */
  pending?: boolean;
  /** Milliseconds the session's finished turns ran (start of the run to its idle): `stats.active_seconds`. */
  active_ms?: number;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  };
  terminated_at: string | null;
  archived_at: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface RunDoc {
  _id: string; // session id: at most one run per session
  tenant_id: string;
  run_id: string;
  owner: string;
  token: number;
  /** First seq of the turn (its session.status_running), for recovery. */
  start_seq: number;
  input_to: number;
  started_at: string;
  /**
   * Set by the recovery scan when it found the run orphaned (no lease holder) and appended
   * session.status_rescheduled; cleared by the worker that resumes it. Status: rescheduling.
   */
  rescheduled_at?: string | null;
}
