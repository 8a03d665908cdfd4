/**
 * sandboxProgram: the file a sandbox runs for an in-sandbox program, `agent` (agent/main.ts) or
 * `launcher` (launcher/main.ts, the Nomad task's entry), as ONE dependency-free ESM file (platform
 * node, target node20, only `node:` builtins imported):
 * - running the built package (dist/program.js, after `npm run build`): the bundle the build
 *   emitted, dist/<name>.mjs;
 * - running from source (tsx, vitest), or when that bundle is missing: the source bundled on the
 *   fly with esbuild's JS API into `<cacheDir>/<name>-<sha256 of the bundle>.mjs` (written once,
 *   atomically; a built bundle is not used from source, it could be older than the source).
 *
 * bundleProgram is the one definition of the bundle; scripts/bundle.ts (npm run bundle) uses it.
 * Proved by sandbox-agent/test/bundle.test.ts (imports only node builtins, the bundled agent
 * serves the protocol) and the driver tests in core/test (sandbox.local, sandbox.nomad).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type SandboxProgramName = 'agent' | 'launcher';

export interface ProgramBundle {
  /** The ESM text of the bundle. */
  code: string;
  /** Every module the bundle imports (builtins only, by construction). */
  imports: string[];
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const fromSource = import.meta.url.endsWith('.ts');

/** Bundles one program's source with esbuild (a dev dependency: present wherever the source is). */
export async function bundleProgram(name: SandboxProgramName): Promise<ProgramBundle> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [join(packageRoot, 'src', name, 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const [out] = result.outputFiles;
  const imports = Object.values(result.metafile.outputs).flatMap((o) =>
    o.imports.map((i) => i.path),
  );
  return { code: out!.text, imports };
}

const cached = new Map<string, Promise<string>>();

/** The path of the program's bundled file (see the header); bundles at most once per process. */
export function sandboxProgram(name: SandboxProgramName, cacheDir: string): Promise<string> {
  const built = join(packageRoot, 'dist', `${name}.mjs`);
  if (!fromSource && existsSync(built)) return Promise.resolve(built);
  const key = `${name}\0${cacheDir}`;
  let p = cached.get(key);
  if (!p) {
    p = bundleInto(name, cacheDir);
    p.catch(() => cached.delete(key));
    cached.set(key, p);
  }
  return p;
}

async function bundleInto(name: SandboxProgramName, cacheDir: string): Promise<string> {
  const { code } = await bundleProgram(name);
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const file = join(cacheDir, `${name}-${hash}.mjs`);
  if (existsSync(file)) return file;
  await fsp.mkdir(cacheDir, { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, code, { mode: 0o644 });
  await fsp.rename(tmp, file);
  return file;
}
