/**
 * SANDBOX_HOST_UID / SANDBOX_HOST_GID (core/src/config/sandboxUser.ts): the default under root,
 * the values taken, uid 0 and bad values refused, and either refused without root (it could not
 * be honoured). The user in effect: test/e2e/sandbox/sandbox-isolation.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseSandboxHostUser } from '../src/config/sandboxUser.js';

describe('SANDBOX_HOST_UID', () => {
  it('defaults to uid and gid 100000 under root, and takes both', () => {
    const problems: string[] = [];
    expect(parseSandboxHostUser({}, problems, true)).toEqual({ uid: 100_000, gid: 100_000 });
    expect(
      parseSandboxHostUser({ SANDBOX_HOST_UID: '2000', SANDBOX_HOST_GID: '3000' }, problems, true),
    ).toEqual({ uid: 2000, gid: 3000 });
    expect(parseSandboxHostUser({ SANDBOX_HOST_UID: '2500' }, problems, true)).toEqual({
      uid: 2500,
      gid: 2500,
    });
    expect(problems).toEqual([]);
  });

  it('refuses uid 0 and non-integers, each named', () => {
    const problems: string[] = [];
    parseSandboxHostUser({ SANDBOX_HOST_UID: '0', SANDBOX_HOST_GID: 'staff' }, problems, true);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^SANDBOX_HOST_UID must be an integer between 1 and/);
    expect(problems[1]).toMatch(/^SANDBOX_HOST_GID must be an integer/);
  });

  it('without root: none, and setting it is a problem', () => {
    const problems: string[] = [];
    expect(parseSandboxHostUser({}, problems, false)).toBeNull();
    expect(problems).toEqual([]);
    parseSandboxHostUser({ SANDBOX_HOST_UID: '2000' }, problems, false);
    expect(problems).toEqual([
      'SANDBOX_HOST_UID needs the platform to run as root (otherwise sandboxes run as its own user)',
    ]);
  });
});
