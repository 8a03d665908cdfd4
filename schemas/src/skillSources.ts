/**
 * Skill sources (`/v1/svc/skill-sources/*`, extension endpoints, beta header required): request
 * bodies and the served shapes. Behaviour: core/src/skills/sources (the Agent Skills well-known
 * discovery index, v0.1 and v0.2); proved by test/e2e/skills/skill-sources.test.ts.
 *
 * `source` is always the URL of the index the skills were found at (what an install records,
 * with the digest, and nothing else: spec Skill rule 4). `digest` is `sha256:<hex>`: the
 * artifact's (index v0.2) or the skill-level digest of its files (index v0.1).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Obj } from './common.js';

const SourceUrl = Type.String({ minLength: 1, maxLength: 2048 });
const SkillName = Type.String({ minLength: 1, maxLength: 64 });
const SkillIds = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 });
const Digest = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });

export const SkillSourceDiscover = Obj({ url: SourceUrl });
export type SkillSourceDiscover = Static<typeof SkillSourceDiscover>;

export const SkillSourceInstall = Obj({
  url: SourceUrl,
  skills: Type.Array(SkillName, { minItems: 1, maxItems: 50 }),
});
export type SkillSourceInstall = Static<typeof SkillSourceInstall>;

/** check-updates and update: absent or null `skill_ids` means every installed skill. */
export const SkillSourceSelection = Obj({ skill_ids: Type.Optional(Nullable(SkillIds)) });
export type SkillSourceSelection = Static<typeof SkillSourceSelection>;

export const SkillSourceOffer = Obj({
  name: Type.String(),
  description: Type.String(),
  /** `skill-md` / `archive` (index v0.2) or `files` (index v0.1). */
  type: Type.Union([Type.Literal('skill-md'), Type.Literal('archive'), Type.Literal('files')]),
  /** The index's digest (v0.2); null for v0.1 entries (known once their files are fetched). */
  digest: Nullable(Digest),
  /** This tenant's skill installed from this entry, if any. */
  installed_skill_id: Nullable(Type.String()),
});
export const SkillSourceDiscovery = Obj({
  source: Type.String(),
  skills: Type.Array(SkillSourceOffer),
});
export type SkillSourceDiscovery = Static<typeof SkillSourceDiscovery>;

export const SkillSourceInstallResult = Obj({
  source: Type.String(),
  skills: Type.Array(
    Obj({
      skill_id: Type.String(),
      name: Type.String(),
      /** `installed` (new skill), `updated` (new version), `unchanged` (same digest). */
      status: Type.Union([
        Type.Literal('installed'),
        Type.Literal('updated'),
        Type.Literal('unchanged'),
      ]),
      version: Type.String(),
      digest: Digest,
    }),
  ),
});
export type SkillSourceInstallResult = Static<typeof SkillSourceInstallResult>;

const CheckStatus = Type.Union([
  Type.Literal('up_to_date'),
  Type.Literal('update_available'),
  Type.Literal('updated'),
  Type.Literal('removed'),
  Type.Literal('unreachable'),
]);
export const SkillSourceCheck = Obj({
  skill_id: Type.String(),
  name: Type.String(),
  source: Type.String(),
  /** The recorded digest (after `update`: the new one when updated). */
  digest: Digest,
  /**
   * check-updates: `up_to_date`, `update_available`, `removed` (no longer in the index: the
   * skill is kept) or `unreachable` (the index could not be read: `error` says why);
   * update: `updated` instead of `update_available`.
   */
  status: CheckStatus,
  /** The source's digest when it differs (update_available / updated). */
  available_digest: Nullable(Digest),
  /** The latest version (after `update`: the new one when updated). */
  version: Type.String(),
  error: Nullable(Type.String()),
});
export const SkillSourceCheckList = Obj({ data: Type.Array(SkillSourceCheck) });
export type SkillSourceCheck = Static<typeof SkillSourceCheck>;

export const SkillSourceInstalled = Obj({
  data: Type.Array(
    Obj({
      skill_id: Type.String(),
      name: Type.String(),
      source: Type.String(),
      digest: Digest,
      latest_version: Type.String(),
    }),
  ),
});
export type SkillSourceInstalled = Static<typeof SkillSourceInstalled>;
