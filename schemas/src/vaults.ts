/**
 * Vaults and their credentials: request bodies as the SDK (1.12, `client.beta.vaults` and
 * `.vaults.credentials`) sends them, plus the spec's `cap_cli` and `command_secret` kinds, and
 * the served shapes. Served shapes carry no secret field at all (token, access_token,
 * refresh_token, client_secret, secret_value), so no renderer can leak one.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Metadata, MetadataPatch, Nullable, Obj } from './common.js';

const Secret = Type.String({ minLength: 1, maxLength: 16_384 });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Name = Type.String({ minLength: 1, maxLength: 255 });
const Time = Type.String({ minLength: 1, maxLength: 64 });
const EnvName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' });
const Host = Type.String({ minLength: 1, maxLength: 253, pattern: '^(\\*\\.)?[A-Za-z0-9.-]+$' });

export const VaultUpdate = Obj({
  display_name: Type.Optional(Nullable(Name)),
  metadata: Type.Optional(Nullable(MetadataPatch)),
});
export type VaultUpdate = Static<typeof VaultUpdate>;
export const VaultListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  include_archived: Type.Optional(Type.Boolean()),
});
export type VaultListQuery = Static<typeof VaultListQuery>;

export const Vault = Obj({
  id: Type.String(),
  type: Type.Literal('vault'),
  display_name: Type.String(),
  /** The spec's `name`: the same value as display_name. */
  name: Type.String(),
  metadata: Type.Record(Type.String(), Type.String()),
  archived_at: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Vault = Static<typeof Vault>;

// ---- credential auth: create
const TokenEndpointAuth = Type.Union([
  Obj({ type: Type.Literal('none') }),
  Obj({ type: Type.Literal('client_secret_basic'), client_secret: Secret }),
  Obj({ type: Type.Literal('client_secret_post'), client_secret: Secret }),
]);
const Networking = Type.Union([
  Obj({ type: Type.Literal('unrestricted') }),
  Obj({
    type: Type.Literal('limited'),
    allowed_hosts: Type.Array(Host, { minItems: 1, maxItems: 16 }),
  }),
]);
const Injection = Obj({
  body: Type.Optional(Type.Boolean()),
  header: Type.Optional(Type.Boolean()),
});
const Commands = Type.Array(
  Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' }),
  { minItems: 1, maxItems: 16 },
);
const CliId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' });

export const CredentialAuthCreate = Type.Union([
  Obj({ type: Type.Literal('static_bearer'), token: Secret, mcp_server_url: Url }),
  Obj({
    type: Type.Literal('mcp_oauth'),
    access_token: Secret,
    mcp_server_url: Url,
    expires_at: Type.Optional(Nullable(Time)),
    refresh: Type.Optional(
      Nullable(
        Obj({
          client_id: Type.String({ minLength: 1, maxLength: 512 }),
          refresh_token: Secret,
          token_endpoint: Url,
          token_endpoint_auth: TokenEndpointAuth,
          resource: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
          scope: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
        }),
      ),
    ),
  }),
  Obj({
    type: Type.Literal('environment_variable'),
    secret_name: EnvName,
    secret_value: Secret,
    networking: Networking,
    injection_location: Type.Optional(Injection),
  }),
  /** Spec: a token for a known CLI, bound through the capability registry by cli_id. */
  Obj({ type: Type.Literal('cap_cli'), cli_id: CliId, token: Secret }),
  /** Spec rule 5: an env var set only on single simple commands of the named programs. */
  Obj({
    type: Type.Literal('command_secret'),
    secret_name: EnvName,
    secret_value: Secret,
    commands: Commands,
  }),
]);
export type CredentialAuthCreate = Static<typeof CredentialAuthCreate>;

// ---- credential auth: update (type must match the stored one)
export const CredentialAuthUpdate = Type.Union([
  Obj({ type: Type.Literal('static_bearer'), token: Type.Optional(Nullable(Secret)) }),
  Obj({
    type: Type.Literal('mcp_oauth'),
    access_token: Type.Optional(Nullable(Secret)),
    expires_at: Type.Optional(Nullable(Time)),
    refresh: Type.Optional(
      Nullable(
        Obj({
          refresh_token: Type.Optional(Nullable(Secret)),
          scope: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
          token_endpoint_auth: Type.Optional(
            Type.Union([
              Obj({
                type: Type.Literal('client_secret_basic'),
                client_secret: Type.Optional(Nullable(Secret)),
              }),
              Obj({
                type: Type.Literal('client_secret_post'),
                client_secret: Type.Optional(Nullable(Secret)),
              }),
            ]),
          ),
        }),
      ),
    ),
  }),
  Obj({
    type: Type.Literal('environment_variable'),
    secret_value: Type.Optional(Nullable(Secret)),
    networking: Type.Optional(Nullable(Networking)),
    injection_location: Type.Optional(Injection),
  }),
  Obj({ type: Type.Literal('cap_cli'), token: Type.Optional(Nullable(Secret)) }),
  Obj({
    type: Type.Literal('command_secret'),
    secret_value: Type.Optional(Nullable(Secret)),
    commands: Type.Optional(Nullable(Commands)),
  }),
]);
export type CredentialAuthUpdate = Static<typeof CredentialAuthUpdate>;

export const CredentialCreate = Obj({
  auth: CredentialAuthCreate,
  display_name: Type.Optional(Nullable(Name)),
  metadata: Type.Optional(Metadata),
});
export type CredentialCreate = Static<typeof CredentialCreate>;
/**
 * SDK: `display_name`. Spec: `name` (the same field) and the secrets in the create body: an
 * optional `credentials` list, created with the vault (each as the credential create body).
 */
export const VaultCreate = Obj({
  display_name: Type.Optional(Name),
  name: Type.Optional(Name),
  metadata: Type.Optional(Metadata),
  credentials: Type.Optional(Type.Array(CredentialCreate, { maxItems: 20 })),
});
export type VaultCreate = Static<typeof VaultCreate>;

export const CredentialUpdate = Obj({
  auth: Type.Optional(CredentialAuthUpdate),
  display_name: Type.Optional(Nullable(Name)),
  metadata: Type.Optional(Nullable(MetadataPatch)),
});
export type CredentialUpdate = Static<typeof CredentialUpdate>;
export const CredentialListQuery = VaultListQuery;

// ---- served credential: public fields only
const Str = Type.String();
export const CredentialAuth = Type.Union([
  Obj({ type: Type.Literal('static_bearer'), mcp_server_url: Str }),
  Obj({
    type: Type.Literal('mcp_oauth'),
    mcp_server_url: Str,
    expires_at: Nullable(Str),
    refresh: Nullable(
      Obj({
        client_id: Str,
        token_endpoint: Str,
        token_endpoint_auth: Obj({
          type: Type.Union([
            Type.Literal('none'),
            Type.Literal('client_secret_basic'),
            Type.Literal('client_secret_post'),
          ]),
        }),
        resource: Nullable(Str),
        scope: Nullable(Str),
      }),
    ),
  }),
  Obj({
    type: Type.Literal('environment_variable'),
    secret_name: Str,
    networking: Type.Union([
      Obj({ type: Type.Literal('unrestricted') }),
      Obj({ type: Type.Literal('limited'), allowed_hosts: Type.Array(Str) }),
    ]),
    injection_location: Obj({ body: Type.Boolean(), header: Type.Boolean() }),
  }),
  Obj({ type: Type.Literal('cap_cli'), cli_id: Str }),
  Obj({ type: Type.Literal('command_secret'), secret_name: Str, commands: Type.Array(Str) }),
]);
export type CredentialAuth = Static<typeof CredentialAuth>;

export const Credential = Obj({
  id: Str,
  type: Type.Literal('vault_credential'),
  vault_id: Str,
  display_name: Nullable(Str),
  auth: CredentialAuth,
  metadata: Type.Record(Str, Str),
  archived_at: Nullable(Str),
  created_at: Str,
  updated_at: Str,
});
export type Credential = Static<typeof Credential>;

// ---- mcp_oauth_validate: the SDK's BetaManagedAgentsCredentialValidation
const CapturedHttpResponse = Obj({
  body: Str,
  body_truncated: Type.Boolean(),
  content_type: Str,
  status_code: Type.Integer(),
});
export const CredentialValidation = Obj({
  type: Type.Literal('vault_credential_validation'),
  credential_id: Str,
  vault_id: Str,
  has_refresh_token: Type.Boolean(),
  status: Type.Union([Type.Literal('valid'), Type.Literal('invalid'), Type.Literal('unknown')]),
  mcp_probe: Nullable(Obj({ method: Str, http_response: Nullable(CapturedHttpResponse) })),
  refresh: Nullable(
    Obj({
      status: Type.Union([
        Type.Literal('succeeded'),
        Type.Literal('failed'),
        Type.Literal('connect_error'),
        Type.Literal('no_refresh_token'),
      ]),
      http_response: Nullable(CapturedHttpResponse),
    }),
  ),
  validated_at: Str,
});
export type CredentialValidation = Static<typeof CredentialValidation>;
