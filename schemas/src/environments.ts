import { Type, type Static } from '@sinclair/typebox';
import { Metadata, MetadataPatch, Nullable, Obj } from './common.js';

const PkgList = Type.Optional(
  Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 256 })),
);
const PackagesParams = Obj({
  type: Type.Optional(Type.Literal('packages')),
  pip: PkgList,
  npm: PkgList,
  apt: PkgList,
  cargo: PkgList,
  gem: PkgList,
  go: PkgList,
});
const Hostname = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: '^(\\*\\.)?[A-Za-z0-9.-]+$',
});

/** The SDK's `config`: cloud (sandbox template) or self-hosted (no runtime settings at all). */
export const EnvironmentConfigParams = Type.Union([
  Obj({
    type: Type.Literal('cloud'),
    networking: Type.Optional(
      Nullable(
        Type.Union([
          Obj({ type: Type.Literal('unrestricted') }),
          Obj({
            type: Type.Literal('limited'),
            allow_mcp_servers: Type.Optional(Nullable(Type.Boolean())),
            allow_package_managers: Type.Optional(Nullable(Type.Boolean())),
            allowed_hosts: Type.Optional(Nullable(Type.Array(Hostname, { maxItems: 256 }))),
          }),
        ]),
      ),
    ),
    packages: Type.Optional(Nullable(PackagesParams)),
  }),
  Obj({ type: Type.Literal('self_hosted') }),
]);

/** The spec's EnvironmentConfig fields, accepted at the top level beside the SDK's `config`. */
const SpecFields = {
  base_image: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  packages: Type.Optional(PackagesParams),
  network: Type.Optional(
    Obj({
      allowlist: Type.Optional(Type.Array(Hostname, { maxItems: 256 })),
      denylist: Type.Optional(Type.Array(Hostname, { maxItems: 256 })),
    }),
  ),
  // additionalProperties: TypeBox turns the key pattern into patternProperties, which alone lets other keys through.
  env: Type.Optional(
    Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String(), {
      maxProperties: 128,
      additionalProperties: false,
    }),
  ),
};

export const EnvironmentCreate = Obj({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
  config: Type.Optional(Nullable(EnvironmentConfigParams)),
  metadata: Type.Optional(Metadata),
  scope: Type.Optional(
    Nullable(Type.Union([Type.Literal('organization'), Type.Literal('account')])),
  ),
  ...SpecFields,
});
export type EnvironmentCreate = Static<typeof EnvironmentCreate>;

export const EnvironmentUpdate = Obj({
  name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 256 }))),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
  config: Type.Optional(Nullable(EnvironmentConfigParams)),
  metadata: Type.Optional(MetadataPatch),
  scope: Type.Optional(
    Nullable(Type.Union([Type.Literal('organization'), Type.Literal('account')])),
  ),
  ...SpecFields,
});
export type EnvironmentUpdate = Static<typeof EnvironmentUpdate>;

export const EnvironmentListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  include_archived: Type.Optional(Type.Boolean()),
});

/** Keys that belong to the runtime host deployment and must never appear on a self-hosted environment. */
export const SELF_HOSTED_FORBIDDEN_KEYS = [
  'provider',
  'volume',
  'checkpoint',
  'output',
  'retention',
] as const;

// The served shapes (Environment, Packages) are schemas in resources.ts.
