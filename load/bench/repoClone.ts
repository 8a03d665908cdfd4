/**
 * Section l: a 10 MB repository clone, direct from the host beside a session's warmup clone
 * through its egress proxy. The git server is test/kit/gitServer.ts (the real `git
 * http-backend` behind HTTPS on 127.0.0.1, a token required); its repository `bench/big` holds
 * 10 files of 1 MiB random bytes (incompressible, so the pack is ~10 MB on the wire), and
 * `bench/tiny` one small file.
 *
 * (a) direct: `git clone` on the host against the server (GIT_SSL_CAINFO = its certificate, the
 *     token in an `http.extraHeader`), the wall time of the git process.
 * (b) through the proxy: its own platform in-process (embedded adapters, SANDBOX_DRIVER=local,
 *     the git server's port opened by EGRESS_ALLOW_PRIVATE_HOSTS, its certificate in
 *     EGRESS_CA_CERTS); `POST /v1/sessions` with a `github_repository` resource, then a
 *     user.message, to that turn's `session.status_idle`. The turn warms the sandbox and clones
 *     the repository (the egress proxy injects the token) before it asks the model
 *     (workers/src/turn/repositories.ts), and the model answers at once, so the figure is
 *     session create → clone present, plus a zero-latency model call. It also holds the
 *     sandbox's cold start, which is why the same path is timed on `bench/tiny`: big − tiny is
 *     the 10 MB's share, set beside the same difference of the direct clones. After each timed
 *     run (untimed) the clone's last file is checked in the sandbox, then the session deleted.
 * Runs alternate tiny/big, after one untimed run of each path. Without bubblewrap (b) prints a
 * one-line "skipped: …" and (a) still runs.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkBubblewrap } from '@agentfleet/core/adapters';
import { OPERATOR_TENANT, startBenchPlatform, type BenchPlatform } from './context.js';
import { watchAppends } from './appended.js';
import { fmt, nowMs, printSection, printTable } from './stats.js';

const RUNS = 3;
const FILES = 10;
const FILE_BYTES = 1024 * 1024;
const LAST_FILE = `blob-${FILES - 1}.bin`;
const TURN_WAIT_MS = 120_000;

/** The parts of test/kit/gitServer.ts the section uses. */
interface GitServer {
  port: number;
  certFile: string;
  root: string;
  createRepo(name: string, files: Record<string, string>): Promise<{ url: string }>;
  close(): Promise<void>;
}

/** git on the host, ignoring the machine's system and global config. */
function git(args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (err, _out, stderr) =>
      err ? reject(new Error(`git ${args[0]} failed: ${err.message}\n${stderr}`)) : resolve(),
    );
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};

/** `bench/big`: the fixture's repository, its main replaced by one commit of random files. */
async function bigRepo(server: GitServer, env: NodeJS.ProcessEnv, dir: string): Promise<string> {
  const { url } = await server.createRepo('bench/big', { 'README.md': 'big\n' });
  const work = join(dir, 'big-work');
  await git(['init', '--quiet', '--initial-branch=main', work], env);
  await writeFile(join(work, 'README.md'), 'big\n');
  for (let i = 0; i < FILES; i++)
    await writeFile(join(work, `blob-${i}.bin`), randomBytes(FILE_BYTES));
  await git(['add', '-A'], env, work);
  await git(['commit', '--quiet', '--no-gpg-sign', '-m', 'random blobs'], env, work);
  await git(['push', '--quiet', '--force', join(server.root, 'bench/big.git'), 'main'], env, work);
  await rm(work, { recursive: true, force: true });
  return url;
}

/** (b): one session's create → its first turn's idle; the clone checked afterwards, untimed. */
async function sessionClone(
  p: BenchPlatform,
  ids: { agentId: string; environmentId: string },
  url: string,
  token: string,
  checkFile: string,
): Promise<number> {
  const watch = watchAppends(p.server.platform.events);
  try {
    const t0 = nowMs();
    const created = await p.json<{ id: string; resources: Array<{ mount_path: string }> }>(
      'POST',
      '/v1/sessions',
      {
        agent: ids.agentId,
        environment_id: ids.environmentId,
        resources: [{ type: 'github_repository', url, authorization_token: token }],
      },
    );
    if (created.status !== 200)
      throw new Error(
        `bench: session create answered ${created.status} ${JSON.stringify(created.body)}`,
      );
    const sid = created.body.id;
    const end = watch.next(
      (s, e) => s === sid && (e.type === 'session.status_idle' || e.type === 'session.error'),
      TURN_WAIT_MS,
      `end of the first turn of ${sid}`,
    );
    end.catch(() => {});
    const sent = await p.json('POST', `/v1/sessions/${sid}/events`, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    });
    if (sent.status !== 202) throw new Error(`bench: POST events answered ${sent.status}`);
    const ended = await end;
    const ms = ended.at - t0;
    if (ended.event.type === 'session.error')
      throw new Error(`bench: the clone failed: ${JSON.stringify(ended.event.payload)}`);
    const manager = p.server.sandboxes!.manager;
    const file = `${created.body.resources[0]!.mount_path}/${checkFile}`;
    const present = await manager.run(
      { tenantId: OPERATOR_TENANT, sessionId: sid, environmentId: ids.environmentId },
      (api) => api.exec({ command: `test -f '${file}'`, timeoutMs: 30_000 }),
    );
    if (present.exitCode !== 0) throw new Error(`bench: ${file} is not in the sandbox`);
    await p.json('DELETE', `/v1/sessions/${sid}`);
    return ms;
  } finally {
    watch.close();
  }
}

export interface RepoCloneFigures {
  directBigMs: number[];
  directTinyMs: number[];
  proxyBigMs: number[];
  proxyTinyMs: number[];
}

export async function repoCloneSection(): Promise<RepoCloneFigures> {
  printSection(
    'l. Repository clone, 10 MB: git clone on the host beside a session warmup clone through the egress proxy',
  );
  const dir = await mkdtemp(join(tmpdir(), 'agentfleet-bench-clone-'));
  const token = `ghs_bench_${randomBytes(12).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Bench',
    GIT_AUTHOR_EMAIL: 'bench@example.test',
    GIT_COMMITTER_NAME: 'Bench',
    GIT_COMMITTER_EMAIL: 'bench@example.test',
  };
  const fixture = new URL('../../test/kit/gitServer.ts', import.meta.url).href;
  const { startGitServer } = (await import(fixture)) as {
    startGitServer: (o: { token: string }) => Promise<GitServer>;
  };
  const server = await startGitServer({ token });
  const figures: RepoCloneFigures = {
    directBigMs: [],
    directTinyMs: [],
    proxyBigMs: [],
    proxyTinyMs: [],
  };
  let p: BenchPlatform | undefined;
  try {
    const big = await bigRepo(server, env, dir);
    const { url: tiny } = await server.createRepo('bench/tiny', { 'README.md': 'tiny\n' });
    // The token as the git server accepts it, in the environment rather than the command line.
    const cloneEnv = {
      ...env,
      GIT_SSL_CAINFO: server.certFile,
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Bearer ${token}`,
    };
    let n = 0;
    const direct = async (url: string) => {
      const target = join(dir, `clone-${n++}`);
      const t0 = nowMs();
      await git(['clone', '--quiet', url, target], cloneEnv);
      const ms = nowMs() - t0;
      await rm(target, { recursive: true, force: true });
      return ms;
    };
    await direct(tiny);
    await direct(big);
    for (let i = 0; i < RUNS; i++) {
      figures.directTinyMs.push(await direct(tiny));
      figures.directBigMs.push(await direct(big));
    }

    const bwrap = checkBubblewrap();
    let skipped: string | null = null;
    if (!bwrap.ok) skipped = `skipped: bubblewrap not installed or unusable (${bwrap.message})`;
    else {
      p = await startBenchPlatform({
        SANDBOX_DRIVER: 'local',
        EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${server.port}`,
        EGRESS_CA_CERTS: server.certFile,
      });
      const ids = await p.sessions(0);
      await sessionClone(p, ids, tiny, token, 'README.md');
      await sessionClone(p, ids, big, token, LAST_FILE);
      for (let i = 0; i < RUNS; i++) {
        figures.proxyTinyMs.push(await sessionClone(p, ids, tiny, token, 'README.md'));
        figures.proxyBigMs.push(await sessionClone(p, ids, big, token, LAST_FILE));
      }
    }

    const row = (name: string, samples: number[]) => [
      name,
      String(samples.length),
      fmt(median(samples)),
      fmt(Math.min(...samples)),
      fmt(Math.max(...samples)),
    ];
    const [dBig, dTiny, pBig, pTiny] = [
      median(figures.directBigMs),
      median(figures.directTinyMs),
      median(figures.proxyBigMs),
      median(figures.proxyTinyMs),
    ];
    const rows = [
      row('(a) direct: git clone on the host, 10 MB', figures.directBigMs),
      row('(a) direct: git clone on the host, tiny', figures.directTinyMs),
    ];
    if (!skipped)
      rows.push(
        row('(b) session create → first turn idle, 10 MB cloned at warmup', figures.proxyBigMs),
        row('(b) session create → first turn idle, tiny cloned at warmup', figures.proxyTinyMs),
      );
    printTable(
      `Repository clone (${FILES} × 1 MiB random bytes; ${RUNS} runs each after 1 untimed, alternating tiny/big)`,
      ['measurement', 'n', 'median ms', 'min ms', 'max ms'],
      rows,
      skipped
        ? [`(b) ${skipped}`]
        : [
            `ratio (b)/(a), 10 MB: ${fmt(pBig / dBig)}x (the session figure holds the sandbox's cold start and warmup)`,
            `the 10 MB's share, big − tiny: through the proxy ${fmt(pBig - pTiny)} ms, direct ${fmt(dBig - dTiny)} ms: ${fmt((pBig - pTiny) / (dBig - dTiny))}x`,
            `${bwrap.version ?? 'bubblewrap'}; the clone runs in the sandbox via the session's egress proxy, which injects the token`,
          ],
    );
    return figures;
  } finally {
    await p?.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
