import { parse as parseYaml } from 'yaml';
import { invalid } from '../errors.js';
import type { SkillFileInput } from './records.js';

/**
 * Skill uploads: file names, limits and the SKILL.md frontmatter. Guarantees (each a 400 naming
 * the field and the problem, proved by test/e2e/skills/skills-api.test.ts "bad input"):
 * - at most SKILL_LIMITS.maxFiles files and maxTotalBytes bytes in all;
 * - a name is relative and clean: no NUL or control character, no backslash, not absolute, no
 *   empty, `.` or `..` segment, at most maxPathBytes; no name twice; no name that is also the
 *   directory of another (`a` and `a/b`);
 * - files sit at the root or all under ONE top-level directory (the SDK's form), which is
 *   stripped; SKILL.md is at that root;
 * - SKILL.md starts with `---` YAML frontmatter (parsed with the `yaml` library) holding
 *   `name` (kebab-case, at most 64 characters) and `description` (1 to 1024 characters).
 * Used by the skill service and by skill sources (core/src/skills/sources).
 */
export const SKILL_LIMITS = {
  maxFiles: 200,
  maxTotalBytes: 8 * 1024 * 1024,
  maxPathBytes: 255,
  maxNameChars: 64,
  maxDescriptionChars: 1024,
  maxDisplayTitleChars: 255,
} as const;

export interface ParsedSkill {
  name: string;
  description: string;
  /** SKILL.md after its frontmatter. */
  body: string;
  /** Files relative to the skill root (the common top-level directory stripped). */
  files: SkillFileInput[];
}

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A clean relative path, or a 400 naming `field`. */
export function checkSkillPath(name: string, field = 'files'): string {
  const bad = (why: string) =>
    invalid(field, `file name ${JSON.stringify(name.slice(0, 100))} ${why}`);
  if (typeof name !== 'string' || name === '') throw invalid(field, 'a file name is empty');
  if (CONTROL.test(name)) throw bad('contains a control character');
  if (name.includes('\\')) throw bad('contains a backslash');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw bad('is absolute');
  if (Buffer.byteLength(name) > SKILL_LIMITS.maxPathBytes)
    throw bad(`is longer than ${SKILL_LIMITS.maxPathBytes} bytes`);
  for (const seg of name.split('/')) {
    if (seg === '..') throw bad('contains a ".." segment (path traversal)');
    if (seg === '' || seg === '.') throw bad('has an empty or "." segment');
  }
  return name;
}

/** Count and byte limits of an upload, checked before anything is parsed or stored. */
export function checkSkillLimits(count: number, bytes: number, field = 'files'): void {
  if (count === 0) throw invalid(field, 'at least one file (SKILL.md) is required');
  if (count > SKILL_LIMITS.maxFiles)
    throw invalid(
      field,
      `more than ${SKILL_LIMITS.maxFiles} files (limit ${SKILL_LIMITS.maxFiles})`,
    );
  if (bytes > SKILL_LIMITS.maxTotalBytes)
    throw invalid(
      field,
      `more than ${SKILL_LIMITS.maxTotalBytes} bytes in all (limit ${SKILL_LIMITS.maxTotalBytes})`,
    );
}

/** Name, description and body of a SKILL.md, or a 400 naming the problem. */
export function parseSkillMd(text: string, field = 'SKILL.md'): Omit<ParsedSkill, 'files'> {
  const src = text.replace(/^\uFEFF/, '');
  const m = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(src);
  if (!m) throw invalid(field, 'must start with YAML frontmatter between "---" lines');
  let meta: unknown;
  try {
    meta = parseYaml(m[1]!, { maxAliasCount: 10 });
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 200);
    throw invalid(field, `frontmatter is not valid YAML: ${why}`);
  }
  if (!meta || typeof meta !== 'object' || Array.isArray(meta))
    throw invalid(field, 'frontmatter must be a YAML mapping with name and description');
  const { name, description } = meta as Record<string, unknown>;
  if (typeof name !== 'string' || name === '')
    throw invalid(`${field}: name`, 'frontmatter name is required (a string)');
  if (name.length > SKILL_LIMITS.maxNameChars || !NAME.test(name))
    throw invalid(
      `${field}: name`,
      `frontmatter name must be kebab-case (a-z, 0-9, '-') and at most ${SKILL_LIMITS.maxNameChars} characters`,
    );
  if (typeof description !== 'string' || description.trim() === '')
    throw invalid(`${field}: description`, 'frontmatter description is required (a string)');
  if (description.length > SKILL_LIMITS.maxDescriptionChars)
    throw invalid(
      `${field}: description`,
      `frontmatter description is longer than ${SKILL_LIMITS.maxDescriptionChars} characters`,
    );
  return { name, description, body: src.slice(m[0].length) };
}

/**
 * The skill in an upload: limits, names, the optional top-level directory stripped, SKILL.md
 * parsed. Throws 400s naming `field` (or `SKILL.md`).
 */
export function parseSkillFiles(files: SkillFileInput[], field = 'files'): ParsedSkill {
  checkSkillLimits(
    files.length,
    files.reduce((n, f) => n + f.content.byteLength, 0),
    field,
  );
  const names = files.map((f) => checkSkillPath(f.filename, field));
  let prefix = '';
  if (!names.includes('SKILL.md')) {
    const top = names[0]!.split('/')[0]!;
    if (names.every((n) => n.startsWith(`${top}/`)) && names.includes(`${top}/SKILL.md`))
      prefix = `${top}/`;
    else
      throw invalid(
        field,
        'SKILL.md is missing: put SKILL.md at the root, or every file under one top-level directory with SKILL.md in it',
      );
  }
  const out = files.map((f) => ({ filename: f.filename.slice(prefix.length), content: f.content }));
  const seen = new Set<string>();
  for (const f of out) {
    if (seen.has(f.filename)) throw invalid(field, `file name "${f.filename}" is given twice`);
    seen.add(f.filename);
  }
  for (const f of out) {
    const parts = f.filename.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (seen.has(dir)) throw invalid(field, `"${dir}" is both a file and a directory`);
    }
  }
  const md = out.find((f) => f.filename === 'SKILL.md')!;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(md.content);
  } catch {
    throw invalid('SKILL.md', 'is not valid UTF-8');
  }
  return { ...parseSkillMd(text), files: out };
}

/** A display title: one line, at most 255 characters; undefined when not given. */
export function checkDisplayTitle(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw invalid(field, 'must be a non-empty string');
  if (v.length > SKILL_LIMITS.maxDisplayTitleChars || /[\r\n]/.test(v))
    throw invalid(
      field,
      `must be one line of at most ${SKILL_LIMITS.maxDisplayTitleChars} characters`,
    );
  return v;
}
