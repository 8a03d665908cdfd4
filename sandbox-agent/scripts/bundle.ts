/**
 * `npm run bundle -w sandbox-agent`: writes dist/agent.mjs and dist/launcher.mjs, one
 * dependency-free ESM file per in-sandbox program (bundleProgram in src/program.ts), and refuses
 * a bundle that imports anything but a node builtin.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { bundleProgram, type SandboxProgramName } from '../src/program.js';

const dist = new URL('../dist/', import.meta.url);
mkdirSync(dist, { recursive: true });
for (const name of ['agent', 'launcher'] as SandboxProgramName[]) {
  const { code, imports } = await bundleProgram(name);
  const foreign = imports.filter((i) => !i.startsWith('node:'));
  if (foreign.length) throw new Error(`${name}: the bundle imports ${foreign.join(', ')}`);
  writeFileSync(new URL(`${name}.mjs`, dist), code);
  process.stdout.write(`dist/${name}.mjs: ${code.length} bytes\n`);
}
