/**
 * Output object keys have one builder (files/files.ts), used by the outputs sync
 * (sandbox/manager/manager.ts) and the outputs API: ids become single key segments, names are checked.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { outputObjectKey, outputsPrefix, SANDBOX_OUTPUTS_DIR } from '../src/files/files.js';
import { SANDBOX_PATHS } from '../src/sandbox/shared.js';

describe('output object keys', () => {
  it('are outputs/<tenant>/<session>/<name>, each id one segment', () => {
    expect(outputsPrefix('tnt_a', 'sesn_1')).toBe('outputs/tnt_a/sesn_1/');
    expect(outputObjectKey('tnt_a', 'sesn_1', 'report.md')).toBe('outputs/tnt_a/sesn_1/report.md');
    expect(outputsPrefix('a/b', 'c')).toBe('outputs/a%2Fb/c/');
  });

  it('refuse ids that are no segment and names that are no single path segment (400 naming filename)', () => {
    for (const id of ['', '.', '..']) {
      expect(() => outputsPrefix(id, 'sesn_1'), id).toThrow(/invalid tenant id/);
      expect(() => outputsPrefix('tnt_a', id), id).toThrow(/invalid session id/);
    }
    for (const name of ['..', 'a/b', 'a\\b', '', 'x\u0000']) {
      let err: unknown;
      try {
        outputObjectKey('tnt_a', 'sesn_1', name);
      } catch (e) {
        err = e;
      }
      expect(err, name).toBeInstanceOf(ApiError);
      expect((err as ApiError).status, name).toBe(400);
      expect((err as ApiError).details, name).toMatchObject({ field: 'filename' });
    }
  });

  it('the outputs directory is defined once, in the sandbox layout', () => {
    expect(SANDBOX_OUTPUTS_DIR).toBe(SANDBOX_PATHS.outputs);
    expect(SANDBOX_OUTPUTS_DIR).toBe('/mnt/session/outputs');
  });
});
