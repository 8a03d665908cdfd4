/**
 * OpenAPI entries of the skill source routes (gateway/src/routes/skillSources.ts).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import {
  SkillSourceCheckList,
  SkillSourceDiscover,
  SkillSourceDiscovery,
  SkillSourceInstall,
  SkillSourceInstalled,
  SkillSourceInstallResult,
  SkillSourceSelection,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'skills';
const BASE = '/v1/svc/skill-sources';
// `.invalid` never resolves: the tenancy test and Schemathesis get a quick 400 from these.
const URL_EXAMPLE = 'https://skills.example.invalid/team';
const SOURCES =
  'The index is looked up at `<url>/.well-known/agent-skills/index.json` (Agent Skills discovery v0.2), then `<url>/.well-known/skills/index.json` (legacy v0.1), then both at the origin root. https only; a source resolving to a private address is refused unless the operator opened its host with SKILL_SOURCES_ALLOW_HOSTS.';
const selection = {
  schema: SkillSourceSelection,
  example: {},
};
const checks = {
  description: 'Each selected installed skill compared with its source.',
  content: json(SkillSourceCheckList),
};

export const SKILL_SOURCE_OPERATIONS: Record<string, OperationDoc> = {
  [`POST ${BASE}/discover`]: {
    operationId: 'discoverSkillSource',
    summary: 'List the skills a source offers',
    description: SOURCES,
    tag,
    body: { schema: SkillSourceDiscover, required: true, example: { url: URL_EXAMPLE } },
    ok: { description: 'The index URL found and its skills.', content: json(SkillSourceDiscovery) },
  },
  [`POST ${BASE}/install`]: {
    operationId: 'installSkillSourceSkills',
    summary: 'Install skills from a source (a new version when installed and changed)',
    description: `${SOURCES} Every artifact's sha256 digest is verified before anything is installed; one bad skill is a 400 naming it and nothing is installed. Only the source (index URL) and digest are recorded.`,
    tag,
    body: {
      schema: SkillSourceInstall,
      required: true,
      example: { url: URL_EXAMPLE, skills: ['code-review'] },
    },
    ok: { description: 'What happened to each skill.', content: json(SkillSourceInstallResult) },
  },
  [`POST ${BASE}/check-updates`]: {
    operationId: 'checkSkillSourceUpdates',
    summary: 'Compare installed skills with their sources',
    description:
      '`skill_ids` absent: every installed skill. A skill gone from its index is reported `removed` and kept.',
    tag,
    body: selection,
    ok: checks,
  },
  [`POST ${BASE}/update`]: {
    operationId: 'updateSkillSourceSkills',
    summary: 'Publish a new version of every changed installed skill',
    tag,
    body: selection,
    ok: checks,
  },
  [`GET ${BASE}/installed`]: {
    operationId: 'listInstalledSourceSkills',
    summary: 'Installed skills with their source and digest',
    tag,
    ok: { description: 'Installed skills.', content: json(SkillSourceInstalled) },
  },
};
