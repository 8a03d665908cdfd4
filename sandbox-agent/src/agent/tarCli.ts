/**
 * The tar CLI when the sandbox has one (found on PATH once), else the built-in tar (`--tar
 * builtin` forces it: useBuiltinTar).
 */
import { accessSync, constants as fsConstants } from 'node:fs';
import * as path from 'node:path';

/** Makes every archive/extract use the built-in tar (the `--tar builtin` option). */
export function useBuiltinTar(): void {
  forceBuiltinTar = true;
  tarPath = undefined;
}

let forceBuiltinTar = false;

export function findTar(): string | null {
  if (forceBuiltinTar) return null;
  for (const dir of (process.env.PATH || '/usr/bin:/bin').split(':')) {
    const p = path.posix.join(dir || '.', 'tar');
    try {
      accessSync(p, fsConstants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

let tarPath: string | null | undefined;
export const tarCli = () => (tarPath === undefined ? (tarPath = findTar()) : tarPath);
