import { strFromU8, unzipSync } from 'fflate';
import type { TestPlatform } from '../../kit/harness.js';

/** Shared by test/e2e/skills/skills-api.test.ts and test/e2e/skills/skills-sdk.test.ts. */
export const skillMd = (
  name: string,
  description = `The ${name} skill.`,
  body = `# ${name}\n\nDo the thing.\n`,
) => `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n${body}`;

export const uniqueName = (base: string) => `${base}-${Math.random().toString(36).slice(2, 8)}`;

/** POST /v1/skills with the JSON form. */
export async function createJson(
  t: TestPlatform,
  key: string,
  files: Array<{ filename: string; content: string; encoding?: string }>,
  extra: Record<string, unknown> = {},
) {
  return t.http('/v1/skills', { method: 'POST', key, json: { files, ...extra } });
}

/** A multipart body with text fields and files (filename kept as given). */
export function form(
  fields: Record<string, string>,
  files: Array<{ field: string; filename: string; content: string | Uint8Array }>,
): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  for (const x of files) f.append(x.field, new Blob([x.content as string]), x.filename);
  return f;
}

/** Entries of a zip response: name → text. */
export async function unzipResponse(res: Response): Promise<Record<string, string>> {
  const z = unzipSync(new Uint8Array(await res.arrayBuffer()));
  return Object.fromEntries(Object.entries(z).map(([k, v]) => [k, strFromU8(v)]));
}

/** Expects a 4xx in the API error shape whose message matches `re`. */
export async function expectError(res: Response, status: number, re: RegExp) {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
  const body = JSON.parse(text) as { type: string; error: { type: string; message: string } };
  if (body.type !== 'error' || !re.test(body.error.message))
    throw new Error(`error message ${JSON.stringify(body.error?.message)} does not match ${re}`);
  return body;
}
