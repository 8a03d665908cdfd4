/**
 * Dream records (core/src/dreams) and their SDK rendering (`BetaDream` of SDK 1.12). The record
 * is the job's whole state: `claim`/`claimed_until` are the worker's compare-and-swap claim (a
 * dead worker's claim expires and the dream is run again); `status` only ever leaves
 * `pending`/`running` once, for `completed`, `failed` or `canceled`.
 */
import type { DreamStatus } from '@agentfleet/schemas';
import type { MemoryActor } from '../memory/records.js';

export type DreamInputDoc =
  { type: 'memory_store'; memory_store_id: string } | { type: 'sessions'; session_ids: string[] };

export interface DreamUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface DreamDoc {
  _id: string;
  tenant_id: string;
  status: DreamStatus;
  inputs: DreamInputDoc[];
  /** The input memory store (also in `inputs`), for the scan and the output's name. */
  store_id: string;
  model: { id: string; speed: 'standard' };
  instructions: string | null;
  output_behavior: { type: 'create_new' } | { type: 'update_existing'; memory_store_id: string };
  outputs: Array<{ type: 'memory_store'; memory_store_id: string }>;
  error: { type: string; message: string } | null;
  usage: DreamUsage;
  /** Who `update_existing` writes as (the versions' `created_by`): the creating API key. */
  actor?: MemoryActor | null;
  /** The running worker's claim token, or null. */
  claim: string | null;
  /** Epoch ms until which the claim holds; 0 when unclaimed. */
  claimed_until: number;
  /** How many times a worker claimed it (a dream that kills its workers stops after 3). */
  attempts: number;
  archived_at: string | null;
  created_at: string;
  ended_at: string | null;
  updated_at: string;
}

export const FINAL_STATUSES: DreamStatus[] = ['completed', 'failed', 'canceled'];
export const LIVE_STATUSES: DreamStatus[] = ['pending', 'running'];

export const zeroUsage = (): DreamUsage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
});

export function renderDream(d: DreamDoc) {
  return {
    type: 'dream' as const,
    id: d._id,
    status: d.status,
    inputs: d.inputs,
    model: d.model,
    instructions: d.instructions,
    output_behavior: d.output_behavior,
    outputs: d.outputs,
    error: d.error,
    usage: d.usage,
    session_id: null,
    archived_at: d.archived_at,
    created_at: d.created_at,
    ended_at: d.ended_at,
  };
}
export type Dream = ReturnType<typeof renderDream>;
