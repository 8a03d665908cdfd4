/** Model cards as stored (secrets sealed). */

export interface ModelCardDoc {
  _id: string;
  tenant_id: string;
  model_id: string;
  provider: string;
  model: string;
  base_url: string | null;
  /** Header names, in clear (served); the values are only in `custom_headers_sealed`. */
  custom_header_names?: string[];
  /** JSON object of the custom headers, sealed (SecretBox, purpose `model-card-headers`). */
  custom_headers_sealed?: string | null;
  /** Legacy: cards stored before sealing kept the values here in clear (sealed on start and on read). */
  custom_headers?: Record<string, string>;
  api_key_sealed: string;
  api_key_preview: string;
  pi_config: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}
