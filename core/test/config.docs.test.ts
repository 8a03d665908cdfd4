/**
 * The configuration table of docs/configuration.md is the schema's (core/src/config/docs.ts):
 * the text between its config-table markers is exactly what `npm run config:docs` writes, and
 * every variable read from the process environment outside core/src/config is in it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TABLE_BEGIN, TABLE_END, withConfigTable } from '../src/config/docs.js';

const ROOT = join(import.meta.dirname, '..', '..');
const DOC = join(ROOT, 'docs', 'configuration.md');

const tableOf = (markdown: string) =>
  markdown.slice(markdown.indexOf(TABLE_BEGIN), markdown.indexOf(TABLE_END));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sourceFiles(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe('docs/configuration.md', () => {
  it('holds the table generated from the schema', () => {
    const doc = readFileSync(DOC, 'utf8');
    expect(doc).toContain(TABLE_BEGIN);
    expect(doc).toContain(TABLE_END);
    expect(
      tableOf(doc),
      "docs/configuration.md's configuration table differs from core/src/config: run `npm run config:docs`",
    ).toBe(tableOf(withConfigTable(doc)));
  });

  it('lists every variable read from the process environment outside core/src/config', () => {
    const table = tableOf(readFileSync(DOC, 'utf8'));
    const packages = readdirSync(ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && readdirSync(join(ROOT, e.name)).includes('src'))
      .map((e) => join(ROOT, e.name, 'src'));
    const read = new Set<string>();
    for (const file of packages.flatMap(sourceFiles)) {
      if (file.includes(join('core', 'src', 'config'))) continue;
      const text = readFileSync(file, 'utf8');
      // A file that takes the process environment: every variable it reads from it.
      if (!text.includes('process.env')) continue;
      for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b(?!\s*=[^=])/g)) read.add(m[1]!);
      for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) read.add(m[1]!);
    }
    expect(read.size).toBeGreaterThan(0);
    expect([...read].filter((v) => !table.includes(`\`${v}\``))).toEqual([]);
  });
});
