/**
 * OpenAPI entries of the skill routes (gateway/src/routes/skills.ts).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import { Type } from '@sinclair/typebox';
import {
  Deleted,
  ListPage,
  Skill,
  SkillCreateJson,
  SkillFileQuery,
  SkillListQuery,
  SkillUploadForm,
  SkillVersion,
  SkillVersionCreateJson,
  SkillVersionListQuery,
} from '@agentfleet/schemas';
import { BYTES, json, type OperationDoc } from './operationHelpers.js';

const tag = 'skills';
/** Custom skills are `skill_…`; built-ins (`xlsx`, `pdf`, `docx`, `pptx`) answer too. */
const SkillId = Type.String({ minLength: 7, maxLength: 128, pattern: '^skill_' });
const Version = Type.String({ minLength: 1, maxLength: 64 });
const oneSkill = { description: 'The skill.', content: json(Skill) };
const oneVersion = { description: 'The skill version.', content: json(SkillVersion) };
const example = {
  files: [
    {
      filename: 'SKILL.md',
      content: '---\nname: example-skill\ndescription: An example.\n---\n# Example\n',
    },
  ],
};
const MULTIPART_NOTE =
  'Also multipart/form-data: file parts `files[]` (the SDK) or `files`, with `display_name` or `display_title`, `description`, `id`.';

export const SKILL_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/skills': {
    operationId: 'createSkill',
    summary: 'Create a skill (or, with `id`, publish a new version of it)',
    tag,
    description: MULTIPART_NOTE,
    body: { schema: SkillCreateJson, required: true, example },
    ok: oneSkill,
  },
  'POST /v1/skills/upload': {
    operationId: 'uploadSkillZip',
    summary: 'Create a skill from a zip (multipart field `file`)',
    tag,
    multipart: SkillUploadForm,
    ok: oneSkill,
  },
  'GET /v1/skills': {
    operationId: 'listSkills',
    summary: 'List skills: built-ins first, then custom skills newest first',
    tag,
    query: SkillListQuery,
    ok: { description: 'A page of skills.', content: json(ListPage(Skill)) },
  },
  'GET /v1/skills/:id': {
    operationId: 'getSkill',
    summary: 'Retrieve a skill',
    tag,
    params: { id: SkillId },
    ok: oneSkill,
  },
  'DELETE /v1/skills/:id': {
    operationId: 'deleteSkill',
    summary: 'Delete a custom skill with its versions (built-ins are refused)',
    tag,
    params: { id: SkillId },
    ok: { description: 'Deleted.', content: json(Deleted('skill_deleted')) },
  },
  'POST /v1/skills/:id/versions': {
    operationId: 'createSkillVersion',
    summary: 'Publish a new version (the SKILL.md name must stay the same)',
    tag,
    description: 'Also multipart/form-data with file parts `files[]` (the SDK) or `files`.',
    params: { id: SkillId },
    body: { schema: SkillVersionCreateJson, required: true, example },
    ok: oneVersion,
  },
  'GET /v1/skills/:id/versions': {
    operationId: 'listSkillVersions',
    summary: 'List versions, newest first',
    tag,
    params: { id: SkillId },
    query: SkillVersionListQuery,
    ok: { description: 'A page of versions.', content: json(ListPage(SkillVersion)) },
  },
  'GET /v1/skills/:id/versions/:version': {
    operationId: 'getSkillVersion',
    summary: 'Retrieve a version (`latest` names the newest)',
    tag,
    params: { id: SkillId, version: Version },
    ok: oneVersion,
  },
  'DELETE /v1/skills/:id/versions/:version': {
    operationId: 'deleteSkillVersion',
    summary: 'Delete a version (not the only one: delete the skill instead)',
    tag,
    params: { id: SkillId, version: Version },
    ok: { description: 'Deleted.', content: json(Deleted('skill_version_deleted')) },
  },
  'GET /v1/skills/:id/versions/:version/content': {
    operationId: 'downloadSkillVersion',
    summary: 'A version as a zip (every file under `<name>/`)',
    tag,
    params: { id: SkillId, version: Version },
    ok: { description: 'The zip.', content: { 'application/zip': null } },
  },
  'GET /v1/skills/:id/files/:filename': {
    operationId: 'downloadSkillFile',
    summary: 'One file of the latest version (`?version=` another)',
    tag,
    params: { id: SkillId, filename: Type.String({ minLength: 1 }) },
    query: SkillFileQuery,
    ok: { description: 'The bytes.', content: BYTES },
  },
  'GET /v1/skills/:id/files/*': {
    operationId: 'downloadSkillNestedFile',
    summary: 'A file in a sub-directory of the latest version (`?version=` another)',
    tag,
    params: {
      id: SkillId,
      filename: Type.String({ minLength: 1 }),
      nested_path: Type.String({ minLength: 1 }),
    },
    query: SkillFileQuery,
    ok: { description: 'The bytes.', content: BYTES },
  },
};
