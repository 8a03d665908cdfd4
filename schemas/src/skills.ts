import { Type } from '@sinclair/typebox';
import { Obj } from './common.js';

/**
 * Skills on the wire (gateway/src/routes/skills.ts; served shapes built in core/src/skills).
 * Spec and SDK fields side by side: `display_title`/`display_name`,
 * `latest_version`/`latest_version_id` (the same numeric epoch string); `source` is the spec's
 * string (`vendor` | `custom`) or, for official SDK clients, the SDK's object `{type}`.
 */
const Epoch = Type.String({ pattern: '^[0-9]+$', description: 'A numeric epoch string (µs).' });

export const Skill = Obj({
  type: Type.Literal('skill'),
  id: Type.String({
    description: '`skill_…`, or the id of a built-in (`xlsx`, `pdf`, `docx`, `pptx`).',
  }),
  display_title: Type.String(),
  display_name: Type.String(),
  name: Type.String({ description: 'SKILL.md frontmatter name: the mount folder.' }),
  description: Type.String(),
  source: Type.Union([
    Type.Union([Type.Literal('vendor'), Type.Literal('custom')]),
    Obj({ type: Type.Union([Type.Literal('anthropic'), Type.Literal('custom')]) }),
  ]),
  latest_version: Epoch,
  latest_version_id: Epoch,
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const SkillVersion = Obj({
  type: Type.Literal('skill_version'),
  id: Epoch,
  version: Epoch,
  skill_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  files: Type.Array(Obj({ filename: Type.String(), size_bytes: Type.Integer({ minimum: 0 }) })),
  created_at: Type.String(),
});

const SkillFile = Obj({
  filename: Type.String({ minLength: 1, description: 'Relative path; SKILL.md at the root.' }),
  content: Type.String(),
  encoding: Type.Optional(Type.Union([Type.Literal('utf8'), Type.Literal('base64')])),
});
const CreateFields = {
  id: Type.Optional(
    Type.String({ description: 'An existing skill: the upload publishes a new version of it.' }),
  ),
  display_title: Type.Optional(Type.String({ maxLength: 255 })),
  display_name: Type.Optional(Type.String({ maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: 1024 })),
};

/** JSON body of `POST /v1/skills` (the spec's form). */
export const SkillCreateJson = Obj({
  files: Type.Array(SkillFile, { minItems: 1 }),
  ...CreateFields,
});
/** JSON body of `POST /v1/skills/:id/versions`. */
export const SkillVersionCreateJson = Obj({ files: Type.Array(SkillFile, { minItems: 1 }) });

const Binary = Type.String({ contentEncoding: 'binary' });
/** Multipart body of `POST /v1/skills` and `/versions`: the SDK's `files[]`, or `files`. */
export const SkillCreateForm = Obj({
  'files[]': Type.Optional(Type.Array(Binary)),
  files: Type.Optional(Type.Array(Binary)),
  ...CreateFields,
});
/** Multipart body of `POST /v1/skills/upload`: one zip. */
export const SkillUploadForm = Obj({ file: Binary, ...CreateFields });

export const SkillListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  page: Type.Optional(Type.String()),
  source: Type.Optional(
    Type.Union([Type.Literal('custom'), Type.Literal('vendor'), Type.Literal('anthropic')]),
  ),
});
export const SkillVersionListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  page: Type.Optional(Type.String()),
});
export const SkillFileQuery = Obj({ version: Type.Optional(Type.String({ minLength: 1 })) });
