/**
 * Send-time handling of `user.define_outcome` (SDK BetaManagedAgentsUserDefineOutcomeEventParams).
 *
 * Guarantees (test/e2e/turns/outcomes.test.ts "a file rubric is read as text; bad requests…"):
 * - at most one per request, and none while another outcome of the session is still pending,
 *   running or evaluating: a 400 naming `events[i].type` (one outcome at a time; interrupt or
 *   wait for its result);
 * - a file rubric must be a text file of this tenant (any other tenant's id reads as not found)
 *   of at most 262,144 characters; it is read now and stored as a text rubric, as the SDK says
 *   ("file rubrics are currently resolved to their text content"); else a 400 naming
 *   `events[i].rubric.file_id`;
 * - the appended event carries a new `outc_` id and `max_iterations` as sent (null: the
 *   default, 3); the session's outcome state is written in the same append as the event.
 */
import type { InputEvent } from '@agentfleet/schemas';
import { invalid } from '../errors.js';
import { newId } from '../ids.js';
import type { Update } from '../store/port.js';
import { activeOutcome, DEFAULT_MAX_ITERATIONS, type OutcomeState } from './records.js';

const MAX_RUBRIC_CHARS = 262_144;

/** Reads a tenant's file (mime type and bytes); throws when it does not exist. */
export type RubricFileReader = (
  tenant: string,
  fileId: string,
) => Promise<{ mime_type: string; data: Uint8Array }>;

type DefineOutcome = Extract<InputEvent, { type: 'user.define_outcome' }>;

export interface PreparedOutcome {
  index: number;
  payload: Record<string, unknown>;
  state: Omit<OutcomeState, 'defined_seq'>;
}

/** Checks the request's define_outcome (if any) and builds its payload; null when there is none. */
export async function prepareOutcome(
  tenant: string,
  events: readonly InputEvent[],
  outcomes: Record<string, OutcomeState> | undefined,
  readFile: RubricFileReader | null,
): Promise<PreparedOutcome | null> {
  const at = events
    .map((e, i) => (e.type === 'user.define_outcome' ? i : -1))
    .filter((i) => i >= 0);
  if (!at.length) return null;
  if (at.length > 1)
    throw invalid(`events[${at[1]}].type`, 'at most one user.define_outcome per request');
  const index = at[0]!;
  const active = activeOutcome(outcomes);
  if (active)
    throw invalid(
      `events[${index}].type`,
      `outcome ${active.outcome_id} is still ${active.result}: one outcome at a time (wait for its result or interrupt)`,
    );
  const e = events[index] as DefineOutcome;
  let rubric: string;
  if (e.rubric.type === 'text') rubric = e.rubric.content;
  else {
    const field = `events[${index}].rubric.file_id`;
    if (!readFile) throw invalid(field, 'file rubrics cannot be read here');
    let file: { mime_type: string; data: Uint8Array };
    try {
      file = await readFile(tenant, e.rubric.file_id);
    } catch {
      throw invalid(field, `file ${e.rubric.file_id} not found`);
    }
    const mime = file.mime_type.split(';')[0]!.trim().toLowerCase();
    if (!mime.startsWith('text/') && mime !== 'application/json')
      throw invalid(field, `file ${e.rubric.file_id} is ${mime}; a rubric is a text file`);
    rubric = new TextDecoder('utf-8', { fatal: false }).decode(file.data);
    if (!rubric.trim()) throw invalid(field, `file ${e.rubric.file_id} is empty`);
    if (rubric.length > MAX_RUBRIC_CHARS)
      throw invalid(field, `a rubric is at most ${MAX_RUBRIC_CHARS} characters`);
  }
  const outcomeId = newId('outc_');
  const maxIterations = e.max_iterations ?? null;
  return {
    index,
    payload: {
      outcome_id: outcomeId,
      description: e.description,
      rubric: { type: 'text', content: rubric },
      max_iterations: maxIterations,
    },
    state: {
      outcome_id: outcomeId,
      description: e.description,
      rubric,
      max_iterations: maxIterations ?? DEFAULT_MAX_ITERATIONS,
      result: 'pending',
      iteration: 0,
      explanation: null,
      completed_at: null,
    },
  };
}

/** Adds the outcome's state to a send's session update (written with the events). */
export function withOutcomeState(update: Update, o: PreparedOutcome | null, first: number): Update {
  if (!o) return update;
  return {
    ...update,
    $set: {
      ...(update.$set ?? {}),
      [`outcomes.${o.state.outcome_id}`]: { ...o.state, defined_seq: first + o.index },
    },
  };
}
