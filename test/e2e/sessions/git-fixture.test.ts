/**
 * The git server fixture (test/kit/gitServer.ts) against the real git CLI over HTTPS:
 * - a clone without credentials fails, and the server recorded the unauthorized request;
 * - a clone with the token as Basic `http.extraHeader` gets main's files at the created head, and
 *   `--branch feature` gets the branch's file;
 * - a push of a new commit to `refs/heads/agent/x` lands in the bare repo (refs and log);
 * - a fetch large enough for git to gzip its request body still works;
 * - a wrong token is a 401 with `WWW-Authenticate: Basic`, for git and for a plain request.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGitServer, type GitServer } from '../../kit/gitServer.js';

const TOKEN = 'fixture-token-0123456789';
const basic = (token: string) =>
  `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

const scratch = mkdtempSync(join(tmpdir(), 'git-fixture-test-'));
let server: GitServer | undefined;
afterAll(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const started = (async () => {
  server = await startGitServer({ token: TOKEN });
  const repo = await server.createRepo(
    'acme/widgets',
    { 'README.md': '# widgets\n', 'src/index.ts': 'export const x = 1;\n' },
    { branches: { feature: { 'FEATURE.md': 'feature branch\n' } } },
  );
  return { server, repo };
})();

function gitCli(
  args: string[],
  cwd = scratch,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = join(scratch, 'home');
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd,
        encoding: 'utf8',
        timeout: 20_000,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          XDG_CONFIG_HOME: join(home, '.config'),
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          GIT_SSL_CAINFO: server!.certFile,
          GIT_AUTHOR_NAME: 'Tester',
          GIT_AUTHOR_EMAIL: 'tester@example.test',
          GIT_COMMITTER_NAME: 'Tester',
          GIT_COMMITTER_EMAIL: 'tester@example.test',
        },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const ok = (r: { code: number; stderr: string }) => expect(r.code, r.stderr).toBe(0);

describe('git server fixture', () => {
  it('refuses a clone without credentials and records the request', async () => {
    const { server, repo } = await started;
    const before = server.requests.length;
    const r = await gitCli(['clone', repo.url, join(scratch, 'anon')]);
    expect(r.code).not.toBe(0);
    const seen = server.requests.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]).toMatchObject({
      method: 'GET',
      path: '/acme/widgets.git/info/refs',
      query: 'service=git-upload-pack',
      authorized: false,
      authorization: null,
    });
    expect(seen.every((q) => !q.authorized)).toBe(true);
  });

  it('clones main and a branch with the token as a Basic header', async () => {
    const { server, repo } = await started;
    const before = server.requests.length;
    const dir = join(scratch, 'clone');
    ok(await gitCli(['-c', `http.extraHeader=${basic(TOKEN)}`, 'clone', repo.url, dir]));
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe('# widgets\n');
    expect(readFileSync(join(dir, 'src/index.ts'), 'utf8')).toBe('export const x = 1;\n');
    const head = await gitCli(['-C', dir, 'rev-parse', 'HEAD']);
    ok(head);
    expect(head.stdout.trim()).toBe(repo.head);
    const seen = server.requests.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((q) => q.authorized && q.authorization === basic(TOKEN).slice(15))).toBe(
      true,
    );
    expect(
      seen.some((q) => q.method === 'POST' && q.path === '/acme/widgets.git/git-upload-pack'),
    ).toBe(true);

    const fdir = join(scratch, 'feature');
    ok(
      await gitCli([
        '-c',
        `http.extraHeader=${basic(TOKEN)}`,
        'clone',
        '--branch',
        'feature',
        repo.url,
        fdir,
      ]),
    );
    expect(readFileSync(join(fdir, 'FEATURE.md'), 'utf8')).toBe('feature branch\n');
    const fhead = await gitCli(['-C', fdir, 'rev-parse', 'HEAD']);
    expect(fhead.stdout.trim()).toBe(repo.branchHeads.feature);
  });

  it('accepts a push of a new branch', async () => {
    const { server, repo } = await started;
    const dir = join(scratch, 'push');
    const auth = `http.extraHeader=${basic(TOKEN)}`;
    ok(await gitCli(['-c', auth, 'clone', repo.url, dir]));
    writeFileSync(join(dir, 'agent.txt'), 'written by the agent\n');
    ok(await gitCli(['-C', dir, 'add', 'agent.txt']));
    ok(await gitCli(['-C', dir, 'commit', '-m', 'agent: add agent.txt']));
    const sha = (await gitCli(['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim();
    ok(await gitCli(['-C', dir, '-c', auth, 'push', 'origin', 'HEAD:refs/heads/agent/x']));

    const refs = await server.refs('acme/widgets');
    expect(refs['refs/heads/agent/x']).toBe(sha);
    expect(refs['refs/heads/main']).toBe(repo.head);
    expect(await server.log('acme/widgets', 'agent/x')).toEqual([
      'agent: add agent.txt',
      'initial commit',
    ]);
    expect(await server.show('acme/widgets', 'agent/x', 'agent.txt')).toBe(
      'written by the agent\n',
    );
    expect(
      server.requests.some((q) => q.method === 'POST' && q.path.endsWith('/git-receive-pack')),
    ).toBe(true);
  });

  it('serves a fetch whose request body git gzips (many wants)', async () => {
    const { server } = await started;
    const branches: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 40; i++) branches[`b${i}`] = { [`b${i}.txt`]: `${i}\n` };
    const repo = await server.createRepo('many', { 'a.txt': 'a\n' }, { branches });
    const dir = join(scratch, 'many');
    ok(
      await gitCli(['-c', `http.extraHeader=${basic(TOKEN)}`, 'clone', '--mirror', repo.url, dir]),
    );
    const r = await gitCli(['--git-dir', dir, 'rev-parse', 'refs/heads/b39']);
    expect(r.stdout.trim()).toBe(repo.branchHeads.b39);
  });

  it('answers a wrong token with 401', async () => {
    const { server, repo } = await started;
    const before = server.requests.length;
    const r = await gitCli([
      '-c',
      `http.extraHeader=${basic('wrong')}`,
      'clone',
      repo.url,
      join(scratch, 'wrong'),
    ]);
    expect(r.code).not.toBe(0);
    const seen = server.requests.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((q) => !q.authorized && q.authorization === basic('wrong').slice(15))).toBe(
      true,
    );

    for (const authorization of [basic('wrong').slice(15), 'Bearer wrong', `Bearer ${TOKEN}x`]) {
      const res = await new Promise<{ status: number; wwwAuth?: string }>((resolve, reject) => {
        const req = request(
          `${repo.url}/info/refs?service=git-upload-pack`,
          { ca: readFileSync(server.certFile), headers: { authorization } },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, wwwAuth: res.headers['www-authenticate'] });
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(res).toEqual({ status: 401, wwwAuth: 'Basic realm="git"' });
    }

    const bearer = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${repo.url}/info/refs?service=git-upload-pack`,
        {
          ca: readFileSync(server.certFile),
          headers: { authorization: `Bearer ${TOKEN}`, 'git-protocol': 'version=2' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(bearer).toBe(200);
  });
});
