/**
 * The shape of the code base, checked: packages depend on each other only in the
 * documented direction (docs/architecture.md, "Packages"): server → gateway, workers → core →
 * sandbox-agent, schemas, nomad; gateway and workers never import each other; core wires
 * nothing and imports no deployable; the in-sandbox programs have no runtime dependency.
 * Files do one job: no TypeScript source or test file is over 500 lines (Prettier, width 100).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const tracked = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '*.ts'], {
  cwd: ROOT,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f && !f.includes('/dist/') && !f.endsWith('.d.ts'));
const pkg = (dir: string) =>
  JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
const importsOf = (file: string) =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/\bfrom\s+'(@agentfleet\/[a-z-]+)/g)].map(
    (m) => m[1],
  );

describe('repository shape', () => {
  it('no TypeScript file is over 500 lines', () => {
    const long = tracked
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 }))
      .filter((x) => x.lines > 500);
    expect(long).toEqual([]);
  });

  it('package dependencies point one way: gateway and workers never depend on each other, core on no deployable', () => {
    const deps = (dir: string) => Object.keys(pkg(dir).dependencies ?? {});
    expect(deps('gateway')).not.toContain('@agentfleet/workers');
    expect(deps('workers')).not.toContain('@agentfleet/gateway');
    for (const d of ['@agentfleet/gateway', '@agentfleet/workers', '@agentfleet/server'])
      expect(deps('core')).not.toContain(d);
    expect(deps('server')).toEqual(
      expect.arrayContaining(['@agentfleet/core', '@agentfleet/gateway', '@agentfleet/workers']),
    );
    // The in-sandbox programs are bundled into one file each: no runtime dependency at all.
    expect(deps('sandbox-agent')).toEqual([]);
  });

  it('source imports follow the package arrows', () => {
    const bad: string[] = [];
    const rule: Record<string, string[]> = {
      'gateway/src/': ['@agentfleet/workers', '@agentfleet/server'],
      'workers/src/': ['@agentfleet/gateway', '@agentfleet/server'],
      'core/src/': ['@agentfleet/gateway', '@agentfleet/workers', '@agentfleet/server'],
      'sandbox-agent/src/': [
        '@agentfleet/core',
        '@agentfleet/gateway',
        '@agentfleet/workers',
        '@agentfleet/server',
        '@agentfleet/schemas',
        '@agentfleet/nomad',
      ],
    };
    for (const f of tracked)
      for (const [prefix, banned] of Object.entries(rule))
        if (f.startsWith(prefix))
          for (const i of importsOf(f)) if (banned.includes(i)) bad.push(`${f} imports ${i}`);
    expect(bad).toEqual([]);
  });

  it('gateway and worker code take services, never the Platform object or raw collections', () => {
    // Routes and steps take the services they use (a Pick of GatewayServices or WorkerServices,
    // or the service itself): no Platform parameter, type or import, and no collection reached
    // past a service.
    const folders = ['gateway/src/', 'workers/src/'];
    const platformType =
      /(?::\s*Platform\b|<\s*Platform\b|\bPlatform\s*[>&|]|\bimport\b[^;]*\bPlatform\b[^;]*from)/;
    const collections = /\.collections\b/;
    const bad = tracked
      .filter((f) => folders.some((d) => f.startsWith(d)))
      .flatMap((f) => {
        const text = readFileSync(join(ROOT, f), 'utf8');
        return [
          ...(platformType.test(text) ? [`${f}: the Platform type`] : []),
          ...(collections.test(text) ? [`${f}: .collections`] : []),
        ];
      });
    expect(bad).toEqual([]);
  });

  // The adapters of core's ports (core/src/adapters.ts, `@agentfleet/core/adapters`), by path
  // under core/src/; `@agentfleet/core` is services, types and ports only.
  const ADAPTER =
    /^(store\/(embedded|mongo)\/|objects\/(directory\.ts|gridfs\/)|bus\/(embedded\.ts|kafka\/)|coordination\/(embedded|redis)\.ts|sandbox\/drivers\/|models\/(anthropic\/|openai\/|providers\.ts))/;
  /** The core/src-relative paths of `file`'s relative imports and re-exports (static or dynamic). */
  const coreImports = (file: string, only = /\b(?:from|import\()\s*'(\.[^']+)'/g) =>
    [...readFileSync(join(ROOT, file), 'utf8').matchAll(only)].map((m) =>
      join(file, '..', m[1])
        .replace(/^core\/src\//, '')
        .replace(/\.js$/, '.ts'),
    );

  it('@agentfleet/core/adapters is imported only by server/src and tests', () => {
    const allowed = /^(server\/src\/|test\/|[a-z-]+\/test\/|load\/)/;
    const bad = tracked.filter(
      (f) =>
        !allowed.test(f) &&
        /\b(?:from|import\()\s*'@agentfleet\/core\/adapters'/.test(
          readFileSync(join(ROOT, f), 'utf8'),
        ),
    );
    expect(bad).toEqual([]);
  });

  it('the core barrel re-exports no adapter, itself or through a module it re-exports', () => {
    const exportsFrom = /\bexport\b[^;]*?\bfrom\s*'(\.[^']+)'/g;
    const direct = coreImports('core/src/index.ts', exportsFrom);
    const bad = [
      ...direct.filter((m) => ADAPTER.test(m)).map((m) => `index.ts re-exports ${m}`),
      ...direct.flatMap((m) =>
        coreImports(`core/src/${m}`, exportsFrom)
          .filter((n) => ADAPTER.test(n))
          .map((n) => `${m} (re-exported by index.ts) re-exports ${n}`),
      ),
    ];
    expect(bad).toEqual([]);
  });

  it('no core/src module but core/src/adapters.ts imports an adapter of another feature', () => {
    const feature = (p: string) => (p.includes('/') ? p.split('/')[0] : '');
    const bad = tracked
      .filter((f) => f.startsWith('core/src/') && f !== 'core/src/adapters.ts')
      .flatMap((f) => {
        const self = f.replace(/^core\/src\//, '');
        return coreImports(f)
          .filter((m) => ADAPTER.test(m) && feature(m) !== feature(self))
          .map((m) => `${self} imports ${m}`);
      });
    expect(bad).toEqual([]);
  });

  it('the session turn-state fields are written only by core/src/sessions/turnState.ts', () => {
    const fields = 'pending|input_seq|processed_seq|interrupt_seq|idle_seq|fence|recoveries';
    // An update operator's object naming a field, a field assigned into an update being built,
    // or a field given its initial value in a new document.
    const writes = [
      new RegExp(`\\$(?:set|max|min|inc|setOnInsert)\\s*:\\s*\\{[^{}]*\\b(?:${fields})\\s*:`),
      new RegExp(`\\b(?:max|set|update)\\.(?:${fields})\\s*=[^=]`),
      new RegExp(`\\b(?:input_seq|processed_seq|fence|recoveries)\\s*:\\s*0\\s*,`),
    ];
    const bad = tracked
      .filter((f) => /^(core|workers|gateway|server)\/src\//.test(f))
      .filter((f) => f !== 'core/src/sessions/turnState.ts')
      .filter((f) => {
        const text = readFileSync(join(ROOT, f), 'utf8');
        return writes.some((w) => w.test(text));
      });
    expect(bad).toEqual([]);
  });
});
