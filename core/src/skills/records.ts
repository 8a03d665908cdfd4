/**
 * Skill documents and the shapes the skill service hands out (core/src/skills/skills.ts).
 *
 * Stored: a `skills` doc per custom skill (unique name per tenant: the mount folder) and a
 * `skillVersions` doc per published version; the files' bytes are objects under
 * `skills/<tenant>/<skill>/<version>/<index>` (the version doc maps index → filename). Built-in
 * skills (core/src/skills/builtins.ts) are not stored: they are read from the package.
 */

/** A file of a skill upload: `filename` relative to the skill root, '/'-separated. */
export interface SkillFileInput {
  filename: string;
  content: Uint8Array;
}
export type SkillRefType = 'anthropic' | 'custom';
/** The spec's `source` string: `vendor` (built-in) or `custom`. */
export type SkillSource = 'vendor' | 'custom';

/** What a session pins at creation: resolved, immutable. */
export interface PinnedSkill {
  type: SkillRefType;
  skill_id: string;
  version: string;
  name: string;
}
export interface LoadedSkill extends PinnedSkill {
  /** SKILL.md body without its frontmatter. */
  body: string;
  /** Every file of the version, SKILL.md included. */
  files: Array<{ filename: string; data: Uint8Array }>;
}
/** Recorded for skills installed from a skill source (S4): the source url and digest only. */
export interface SkillOrigin {
  url: string;
  digest: string;
}

export interface SkillDoc {
  _id: string;
  tenant_id: string;
  /** SKILL.md frontmatter name: immutable; unique per tenant. */
  name: string;
  display_title: string;
  description: string;
  latest_version: string;
  /** Versions held; a version delete decrements it conditionally (never below 1). */
  version_count: number;
  origin: SkillOrigin | null;
  created_at: string;
  updated_at: string;
}
export interface SkillVersionDoc {
  /** `${skill_id}/${version}` */
  _id: string;
  tenant_id: string;
  skill_id: string;
  version: string;
  name: string;
  description: string;
  /** Files in upload order; `key` is the object store key of the bytes. */
  files: Array<{ filename: string; size_bytes: number; key: string }>;
  origin: SkillOrigin | null;
  created_at: string;
}

/** A skill as served (the spec's shape plus the SDK's field names; see routes/skills.ts). */
export interface Skill {
  type: 'skill';
  id: string;
  display_title: string;
  display_name: string;
  name: string;
  description: string;
  source: SkillSource;
  latest_version: string;
  latest_version_id: string;
  created_at: string;
  updated_at: string;
}
export interface SkillVersion {
  type: 'skill_version';
  id: string;
  version: string;
  skill_id: string;
  name: string;
  description: string;
  files: Array<{ filename: string; size_bytes: number }>;
  created_at: string;
}
