/**
 * The tar CLI when the sandbox has one (found on PATH once), else the built-in tar (`--tar
 * builtin` forces it: useBuiltinTar); runTar runs it over a whole archive held in memory.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import { AgentError } from '../protocol.js';
import { fsError } from './params.js';

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

export function runTar(
  args: string[],
  input: Buffer | null,
  maxOut: number,
  op: string,
  dir: string,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(tarCli()!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxOut) {
        if (!over) {
          over = true;
          child.kill('SIGKILL');
        }
        return;
      }
      chunks.push(c);
    });
    child.stderr!.on('data', (c: Buffer) => {
      if (stderr.length < 4000) stderr += c.toString('utf8');
    });
    child.stdin!.on('error', () => {});
    child.stdin!.end(input ?? undefined);
    child.once('error', (err) => reject(fsError(err, op, dir)));
    child.once('close', (code) => {
      if (over)
        return reject(
          new AgentError('too_large', `${op}: ${dir}: the archive exceeds ${maxOut} bytes`, {
            path: dir,
          }),
        );
      if (code !== 0)
        return reject(
          new AgentError(
            'io',
            `${op}: ${dir}: tar exited with ${code}: ${stderr.trim().slice(0, 1000)}`,
            { path: dir },
          ),
        );
      resolve(Buffer.concat(chunks));
    });
  });
}
