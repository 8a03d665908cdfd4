/**
 * Request parameters of the agent's methods checked by name (a bad one is an `invalid_params`
 * error naming it), and file-system errors mapped to the protocol's error kinds.
 */
import * as path from 'node:path';
import { AgentError, DEFAULT_CWD, type AgentErrorKind } from '../protocol.js';

export function fsError(err: unknown, op: string, p: string): AgentError {
  const e = err as NodeJS.ErrnoException;
  if (e instanceof AgentError) return e;
  const errno = e?.code;
  const map: Record<string, [AgentErrorKind, string]> = {
    ENOENT: ['not_found', 'no such file or directory'],
    EISDIR: ['is_directory', 'is a directory'],
    ENOTDIR: ['not_directory', 'a component of the path is not a directory'],
    EACCES: ['permission_denied', 'permission denied'],
    EPERM: ['permission_denied', 'operation not permitted'],
    EROFS: ['permission_denied', 'read-only file system'],
    EEXIST: ['exists', 'already exists'],
    EFBIG: ['too_large', 'file too large'],
    ENOSPC: ['io', 'no space left on device'],
  };
  const [kind, text] = (errno && map[errno]) || ['io', e?.message ?? String(err)];
  return new AgentError(kind, `${op}: ${p}: ${text}`, { path: p, ...(errno ? { errno } : {}) });
}

export type Params = Record<string, unknown>;

export function str(p: Params, key: string, method: string, optional: true): string | undefined;
export function str(p: Params, key: string, method: string, optional?: false): string;
export function str(p: Params, key: string, method: string, optional = false): string | undefined {
  const v = p[key];
  if (v === undefined || v === null) {
    if (optional) return undefined;
    throw new AgentError('invalid_params', `${method}: '${key}' is required`, { argument: key });
  }
  if (typeof v !== 'string')
    throw new AgentError('invalid_params', `${method}: '${key}' must be a string`, {
      argument: key,
    });
  return v;
}

export function num(
  p: Params,
  key: string,
  method: string,
  def: number,
  min: number,
  max: number,
): number {
  const v = p[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new AgentError(
      'invalid_params',
      `${method}: '${key}' must be a number between ${min} and ${max}`,
      { argument: key },
    );
  }
  return Math.floor(v);
}

export function absPath(p: Params, key: string, method: string, def?: string): string {
  const v = def === undefined ? str(p, key, method) : (str(p, key, method, true) ?? def);
  if (!v)
    throw new AgentError('invalid_params', `${method}: '${key}' must not be empty`, {
      argument: key,
    });
  if (v.includes('\0'))
    throw new AgentError('invalid_params', `${method}: '${key}' contains a NUL byte`, {
      argument: key,
    });
  return path.posix.resolve(DEFAULT_CWD, v);
}

/** An optional object of environment variables: string values, names without '=' or NUL. */
export function envParam(p: Params, key: string, method: string): Record<string, string> {
  const env: Record<string, string> = {};
  const v = p[key];
  if (v === undefined || v === null) return env;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new AgentError('invalid_params', `${method}: '${key}' must be an object of strings`, {
      argument: key,
    });
  for (const [k, val] of Object.entries(v as Params)) {
    if (typeof val !== 'string' || !k || k.includes('=') || k.includes('\0') || val.includes('\0'))
      throw new AgentError('invalid_params', `${method}: ${key}.${k} must be a string`, {
        argument: `${key}.${k}`,
      });
    env[k] = val;
  }
  return env;
}
