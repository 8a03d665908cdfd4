/**
 * The agent's `exec`: runs a command in its own process group with a timeout and capped output;
 * the process groups still running are killed when the agent exits (killGroup, running).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import {
  AgentError,
  DEFAULT_CWD,
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_OUTPUT_BYTES_LIMIT,
} from '../protocol.js';
import { absPath, envParam, fsError, num, str, type Params } from './params.js';

export function capture(stream: Readable, max: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const done = new Promise<void>((resolve) => {
    stream.on('data', (c: Buffer) => {
      if (size >= max) {
        truncated = true;
        return;
      }
      if (size + c.length > max) truncated = true;
      const take = c.subarray(0, max - size);
      chunks.push(take);
      size += take.length;
    });
    stream.once('close', resolve);
    stream.once('end', resolve);
    stream.once('error', () => resolve());
  });
  return {
    done,
    get truncated() {
      return truncated;
    },
    text: () => new StringDecoder('utf8').write(Buffer.concat(chunks, size)),
  };
}

export const running = new Set<ChildProcess>();

export function killGroup(child: ChildProcess): void {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}

export async function execCommand(p: Params) {
  const command = str(p, 'command', 'exec');
  const cwd = absPath(p, 'cwd', 'exec', DEFAULT_CWD);
  const timeoutMs = num(p, 'timeoutMs', 'exec', DEFAULT_EXEC_TIMEOUT_MS, 1, 24 * 3600_000);
  const max = num(p, 'maxOutputBytes', 'exec', DEFAULT_MAX_OUTPUT_BYTES, 0, MAX_OUTPUT_BYTES_LIMIT);
  const stdin = str(p, 'stdin', 'exec', true);
  const env = envParam(p, 'env', 'exec');
  let st: Stats;
  try {
    st = await fsp.stat(cwd);
  } catch (err) {
    throw fsError(err, 'exec: cwd', cwd);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `exec: cwd ${cwd} is not a directory`, {
      path: cwd,
      argument: 'cwd',
    });

  const started = Date.now();
  const child = spawn('/bin/sh', ['-c', command], {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  const out = capture(child.stdout!, max);
  const err = capture(child.stderr!, max);
  child.stdin!.on('error', () => {});
  child.stdin!.end(stdin ?? '');
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child);
  }, timeoutMs);
  try {
    const { code, signal } = await new Promise<{
      code: number | null;
      signal: NodeJS.Signals | null;
    }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
    });
    // Background processes may still hold the pipes: wait a moment for the output, then let go.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([out.done, err.done]),
      new Promise<void>((r) => {
        grace = setTimeout(r, 150);
      }),
    ]);
    clearTimeout(grace);
    child.stdout!.destroy();
    child.stderr!.destroy();
    return {
      exitCode: code,
      signal,
      stdout: out.text(),
      stderr: err.text(),
      timedOut,
      truncated: out.truncated || err.truncated,
      durationMs: Date.now() - started,
    };
  } finally {
    clearTimeout(timer);
    running.delete(child);
  }
}
