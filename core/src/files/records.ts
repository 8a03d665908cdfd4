/** Files as stored (bytes in the object store). */

export interface FileDoc {
  _id: string;
  tenant_id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  /** Object store key of the bytes (`files/<tenant>/<id>`). */
  object_key: string;
  /** The session the file was uploaded for (its scope), or null. */
  scope_id: string | null;
  expires_at: string | null;
  created_at: string;
}
