/** Session events as stored (one document per event, seq-ordered per session). */

export interface EventDoc {
  _id: string;
  tenant_id: string;
  session_id: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  created_at: string;
}
