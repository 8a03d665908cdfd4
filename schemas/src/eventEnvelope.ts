import { Type, type TProperties } from '@sinclair/typebox';
import { Id, Obj } from './common.js';

/** Every persisted event: the payload flat, then the envelope (`renderEvent`). */
export const eventOf = <T extends string, P extends TProperties>(type: T, payload: P) =>
  Obj({
    ...payload,
    id: Id('sevt_'),
    type: Type.Literal(type),
    seq: Type.Integer({ minimum: 1 }),
    session_id: Id('sess_'),
    created_at: Type.String({ format: 'date-time' }),
    processed_at: Type.String({ format: 'date-time' }),
    data: Obj(payload),
  });
