/** Why a session (or a session thread) went idle: the SDK's stop reasons (session.status_idle, session.thread_status_idle). */
import { Type, type Static } from '@sinclair/typebox';
import { Obj } from './common.js';

export const StopReason = Type.Union([
  Obj({ type: Type.Literal('end_turn') }),
  Obj({ type: Type.Literal('requires_action'), event_ids: Type.Array(Type.String()) }),
  Obj({ type: Type.Literal('retries_exhausted') }),
  Obj({ type: Type.Literal('budget_reached') }),
  Obj({ type: Type.Literal('refusal') }),
]);
export type StopReason = Static<typeof StopReason>;
