/**
 * The skills index of a source: where it is looked up and how it is read. The format is the
 * Agent Skills well-known discovery convention (agentskills.io "Well-Known URI", from
 * Cloudflare's Agent Skills Discovery RFC):
 *
 * - v0.2.0 (`/.well-known/agent-skills/index.json`): `{"$schema":
 *   "https://schemas.agentskills.io/discovery/0.2.0/schema.json", "skills": [{name,
 *   description, type: "skill-md" | "archive", url, digest: "sha256:<64 hex>"}]}`; `url` is
 *   resolved against the index URL (RFC 3986); the digest is the SHA-256 of the artifact
 *   (the SKILL.md file, or the .zip / .tar.gz archive) and is verified before anything is
 *   installed. Entries of another `type` are skipped.
 * - v0.1.0, legacy (`/.well-known/skills/index.json`): `{"skills": [{name, description, files:
 *   ["SKILL.md", "scripts/run.sh", …]}]}`; each file is served next to the index at
 *   `<index dir>/<name>/<path>`. Entries may give `{path, digest}` objects instead of strings
 *   (the RFC's interim 0.2.0 draft): such per-file digests are verified. The digest recorded for
 *   such a skill is the RFC's skill-level digest: SHA-256 over the lines `path\0hex(sha256)\n`
 *   of its files sorted by path.
 *
 * The form of each entry decides how it is read (`url` → artifact, `files` → files), so an
 * index without `$schema` is accepted; a `$schema` naming another discovery version is a 400.
 *
 * Lookup (spec "Skill source rules" 1): `<url>/.well-known/agent-skills/index.json`, then
 * `<url>/.well-known/skills/index.json`, then the same two paths at the origin root; a URL that
 * already names an `index.json` is used as it is. Proved by test/e2e/skills/skill-sources.test.ts.
 */
import { invalid } from '../../errors.js';
import { httpsUrl, type SourceFetcher } from './fetch.js';

export const MAX_INDEX_BYTES = 1024 * 1024;
/** Entries listed by one index (more is a 400). */
export const MAX_INDEX_SKILLS = 500;
/** Files one v0.1 entry may list. */
export const MAX_INDEX_FILES = 200;

const SCHEMA_V02 = /^https:\/\/schemas\.agentskills\.io\/discovery\/0\.2\.\d+\/schema\.json$/;
const NAME = /^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
// Printable ASCII without \ ? # [ ] (RFC path requirements), '/'-separated, relative.
const PATH = /^[\x20-\x7e]+$/;

export interface FileRef {
  path: string;
  /** Where it is served: `<index dir>/<name>/<path>`, absolute. */
  url: string;
  /** `sha256:<hex>` when the index gives one. */
  digest: string | null;
}

export type IndexEntry =
  | { name: string; description: string; type: 'files'; files: FileRef[] }
  | {
      name: string;
      description: string;
      type: 'skill-md' | 'archive';
      /** Absolute, resolved against the index URL. */
      url: string;
      digest: string;
    };

export interface SourceIndex {
  /** The URL the index was found at: what installs record as their source. */
  url: string;
  skills: IndexEntry[];
}

/** The locations tried for a source URL, in order. */
export function indexCandidates(source: URL): URL[] {
  const clean = new URL(source.href);
  clean.search = '';
  clean.hash = '';
  if (/\/index\.json$/.test(clean.pathname)) return [clean];
  const dir = clean.pathname.endsWith('/') ? clean.href : `${clean.href}/`;
  const out = [
    new URL('.well-known/agent-skills/index.json', dir),
    new URL('.well-known/skills/index.json', dir),
    new URL('/.well-known/agent-skills/index.json', clean.origin),
    new URL('/.well-known/skills/index.json', clean.origin),
  ];
  return out.filter((u, i) => out.findIndex((o) => o.href === u.href) === i);
}

/** Finds and reads the index of `source` (a 400 naming `field` when there is none). */
export async function loadIndex(
  http: SourceFetcher,
  source: string,
  field = 'url',
): Promise<SourceIndex> {
  const candidates = indexCandidates(httpsUrl(source, field));
  const misses: string[] = [];
  for (const candidate of candidates) {
    const res = await http.get(candidate, field, MAX_INDEX_BYTES);
    if (res.status < 200 || res.status > 299) {
      misses.push(`${candidate.href} (${res.status})`);
      continue;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(new TextDecoder().decode(res.bytes));
    } catch {
      misses.push(`${candidate.href} (not JSON)`);
      continue;
    }
    // relative entry URLs resolve against where the index was served (after redirects)
    return { ...parseIndex(doc, res.url, field), url: candidate.href };
  }
  throw invalid(field, `no skills index found; tried ${misses.join(', ')}`);
}

/** Why a relative file path from an index is unusable, or null. */
export function unsafeIndexPath(p: string): string | null {
  if (!p || p.length > 512) return 'must be 1-512 characters';
  if (!PATH.test(p) || /[\\?#[\]%]/.test(p))
    return 'must be printable ASCII without \\ ? # [ ] % or control characters';
  if (p.startsWith('/')) return 'must be relative';
  if (p.split('/').some((s) => s === '..' || s === '.' || s === ''))
    return "must not contain '..', '.' or empty segments";
  return null;
}

/** Reads an index document found at `indexUrl`. Problems are 400s naming `field`. */
export function parseIndex(doc: unknown, indexUrl: string, field = 'url'): SourceIndex {
  const bad = (what: string) => invalid(field, `the skills index at ${indexUrl}: ${what}`);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad('is not a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.$schema !== undefined && (typeof d.$schema !== 'string' || !SCHEMA_V02.test(d.$schema)))
    throw bad(`$schema ${JSON.stringify(d.$schema)} is not a supported discovery version (0.2.x)`);
  if (!Array.isArray(d.skills)) throw bad('`skills` must be an array');
  if (d.skills.length > MAX_INDEX_SKILLS) throw bad(`lists more than ${MAX_INDEX_SKILLS} skills`);
  const skills: IndexEntry[] = [];
  const seen = new Set<string>();
  d.skills.forEach((raw, i) => {
    const at = `skills[${i}]`;
    if (!raw || typeof raw !== 'object') throw bad(`${at} is not an object`);
    const e = raw as Record<string, unknown>;
    if (typeof e.name !== 'string' || !NAME.test(e.name))
      throw bad(`${at}.name must be kebab-case, 1-64 characters`);
    if (seen.has(e.name)) throw bad(`${at}.name '${e.name}' is listed twice`);
    seen.add(e.name);
    const description = typeof e.description === 'string' ? e.description.slice(0, 1024) : '';
    if (e.url !== undefined) {
      const type = e.type ?? 'skill-md';
      if (type !== 'skill-md' && type !== 'archive') return; // unknown types are skipped
      if (typeof e.url !== 'string') throw bad(`${at}.url must be a string`);
      let url: URL;
      try {
        url = new URL(e.url, indexUrl);
      } catch {
        throw bad(`${at}.url is not a URL`);
      }
      const digest = typeof e.digest === 'string' ? e.digest.toLowerCase() : '';
      if (!DIGEST.test(digest)) throw bad(`${at}.digest must be sha256:<64 hex characters>`);
      skills.push({ name: e.name, description, type, url: url.href, digest });
      return;
    }
    if (!Array.isArray(e.files) || e.files.length === 0)
      throw bad(`${at} needs \`url\` and \`digest\` (v0.2) or a non-empty \`files\` list (v0.1)`);
    if (e.files.length > MAX_INDEX_FILES)
      throw bad(`${at}.files lists more than ${MAX_INDEX_FILES} files`);
    const files: FileRef[] = e.files.map((f, j) => {
      const path = typeof f === 'string' ? f : (f as { path?: unknown })?.path;
      const digestRaw = typeof f === 'object' && f ? (f as { digest?: unknown }).digest : null;
      if (typeof path !== 'string') throw bad(`${at}.files[${j}] must be a path`);
      const why = unsafeIndexPath(path);
      if (why) throw bad(`${at}.files[${j}] '${path.slice(0, 100)}' ${why}`);
      const digest = typeof digestRaw === 'string' ? digestRaw.toLowerCase() : null;
      if (digest !== null && !DIGEST.test(digest))
        throw bad(`${at}.files[${j}].digest must be sha256:<64 hex characters>`);
      return { path, digest, url: new URL(`${e.name}/${path}`, indexUrl).href };
    });
    if (!files.some((f) => f.path === 'SKILL.md')) throw bad(`${at}.files has no SKILL.md`);
    if (new Set(files.map((f) => f.path)).size !== files.length)
      throw bad(`${at}.files lists a path twice`);
    skills.push({ name: e.name, description, type: 'files', files });
  });
  return { url: indexUrl, skills };
}
