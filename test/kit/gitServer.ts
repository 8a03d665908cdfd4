/**
 * A real git server for tests: bare repositories in a temp dir, served over HTTPS on 127.0.0.1
 * through git's own `git http-backend` CGI (one child process per request), so clone, fetch and
 * push behave exactly as against a real smart-HTTP host.
 *
 * Guarantees:
 * - every request runs through the real `git http-backend` (protocol v2 via `Git-Protocol`,
 *   gzip-encoded request bodies and chunked pushes are handled by git itself); push is enabled
 *   (`http.receivepack true` in every repository);
 * - with `token` set, a request is served only if it carries `Authorization: Basic` with the token
 *   as password (any username) or `Authorization: Bearer <token>`, compared in constant time;
 *   anything else is a 401 with `WWW-Authenticate: Basic realm="git"`;
 * - every request is recorded in `requests`, authorized or not;
 * - the certificate is self-signed for 127.0.0.1 and localhost: trust `certFile`
 *   (GIT_SSL_CAINFO for the git CLI, EGRESS_CA_CERTS for the platform).
 *
 * Proven by test/e2e/sessions/git-fixture.test.ts.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { selfSignedCert } from './tls.js';

export interface GitRequest {
  method: string;
  /** URL path, e.g. `/acme/widgets.git/info/refs`. */
  path: string;
  /** Query string without the leading `?`. */
  query: string;
  authorized: boolean;
  /** The raw `Authorization` header, or null when absent. */
  authorization: string | null;
}

export interface CreatedRepo {
  /** Clone URL, `https://127.0.0.1:<port>/<name>.git`. */
  url: string;
  /** The `main` commit sha. */
  head: string;
  /** Each extra branch's head sha. */
  branchHeads: Record<string, string>;
}

export interface GitServer {
  port: number;
  /** The self-signed certificate (PEM) to trust. */
  certFile: string;
  /** Directory holding the bare repositories (`<root>/<name>.git`). */
  root: string;
  requests: GitRequest[];
  url(name: string): string;
  /**
   * A bare repository `<name>.git` whose `main` holds `files` as one commit; each extra branch
   * forks from main and adds its files as one commit. `name` may contain one slash (`acme/widgets`).
   */
  createRepo(
    name: string,
    files: Record<string, string>,
    opts?: { branches?: Record<string, Record<string, string>> },
  ): Promise<CreatedRepo>;
  /** Commit subjects on `ref`, newest first. */
  log(name: string, ref: string): Promise<string[]>;
  /** Every ref (`refs/heads/main`, …) and its sha. */
  refs(name: string): Promise<Record<string, string>>;
  /** The content of `path` at `ref`. */
  show(name: string, ref: string, path: string): Promise<string>;
  close(): Promise<void>;
}

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.test',
  GIT_COMMITTER_NAME: 'Fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.test',
};

/** An environment for git that ignores the host's system and global config. */
function gitEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
  };
}

function git(args: string[], opts: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd: opts.cwd, env: opts.env, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`git ${args.join(' ')} failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality: both sides are hashed to equal-length digests first. */
function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

/** Whether `header` carries `token` (Basic with it as password, or Bearer); the Basic username. */
function checkAuth(header: string | undefined, token: string): { ok: boolean; user?: string } {
  if (!header) return { ok: false };
  const m = /^(\S+)\s+(.*)$/.exec(header.trim());
  if (!m) return { ok: false };
  const scheme = m[1].toLowerCase();
  if (scheme === 'bearer') return { ok: sameSecret(m[2].trim(), token), user: 'bearer' };
  if (scheme !== 'basic') return { ok: false };
  const decoded = Buffer.from(m[2].trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return { ok: false };
  return { ok: sameSecret(decoded.slice(colon + 1), token), user: decoded.slice(0, colon) };
}

/** Splits CGI output at the blank line ending its headers; null until that line has arrived. */
function splitCgiHeaders(buf: Buffer): { head: string; rest: Buffer } | null {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  let end = -1;
  let sep = 0;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) [end, sep] = [crlf, 4];
  else if (lf >= 0) [end, sep] = [lf, 2];
  if (end < 0) return null;
  return { head: buf.subarray(0, end).toString('latin1'), rest: buf.subarray(end + sep) };
}

const VALID_NAME = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)?$/;

export async function startGitServer(opts: { token?: string } = {}): Promise<GitServer> {
  const token = opts.token;
  const root = await mkdtemp(join(tmpdir(), 'git-fixture-'));
  const repos = join(root, 'repos');
  const home = join(root, 'home');
  mkdirSync(repos);
  mkdirSync(home);
  const tls = selfSignedCert('git-fixture');
  const env = gitEnv(home);
  const execPath = (await git(['--exec-path'], { env })).trim();
  const backend = join(execPath, 'git-http-backend');
  const requests: GitRequest[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const authorization = req.headers.authorization ?? null;
    const auth =
      token === undefined
        ? { ok: true, user: undefined }
        : checkAuth(req.headers.authorization, token);
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      authorized: auth.ok,
      authorization,
    });
    if (!auth.ok) {
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }

    const cgiEnv: NodeJS.ProcessEnv = {
      ...env,
      GIT_PROJECT_ROOT: repos,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_HTTP_MAX_REQUEST_BUFFER: '100M',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    };
    if (req.headers['content-length'] !== undefined)
      cgiEnv.CONTENT_LENGTH = req.headers['content-length'];
    if (auth.user) cgiEnv.REMOTE_USER = auth.user;
    // Every other header as HTTP_*: git reads HTTP_CONTENT_ENCODING (it inflates gzip bodies
    // itself) and HTTP_GIT_PROTOCOL (protocol v2).
    for (const [k, v] of Object.entries(req.headers)) {
      if (
        k === 'authorization' ||
        k === 'content-type' ||
        k === 'content-length' ||
        v === undefined
      )
        continue;
      cgiEnv[`HTTP_${k.toUpperCase().replace(/-/g, '_')}`] = Array.isArray(v) ? v.join(', ') : v;
    }

    const child = spawn(backend, [], { env: cgiEnv, cwd: repos, stdio: ['pipe', 'pipe', 'pipe'] });
    const stderr: Buffer[] = [];
    child.stderr.on('data', (c: Buffer) => stderr.push(c));
    child.stdin.on('error', () => {}); // the backend may exit before reading the whole body
    child.on('error', (err) => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(`git http-backend failed to start: ${err.message}\n`);
    });
    req.pipe(child.stdin);
    res.on('close', () => {
      if (child.exitCode === null) child.kill();
    });

    let pending: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const split = splitCgiHeaders(pending);
      if (!split) return;
      child.stdout.off('data', onData);
      child.stdout.off('end', onEnd);
      let status = 200;
      let reason: string | undefined;
      const headers: Record<string, string[]> = {};
      for (const line of split.head.split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') {
          const m = /^(\d{3})\s*(.*)$/.exec(value);
          if (m) [status, reason] = [Number(m[1]), m[2] || undefined];
        } else {
          (headers[name] ??= []).push(value);
        }
      }
      if (reason) res.writeHead(status, reason, headers);
      else res.writeHead(status, headers);
      if (split.rest.length) res.write(split.rest);
      child.stdout.pipe(res);
    };
    const onEnd = () => {
      if (res.headersSent) return;
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`git http-backend sent no CGI headers\n${Buffer.concat(stderr).toString('utf8')}`);
    };
    child.stdout.on('data', onData);
    child.stdout.on('end', onEnd);
  };

  const server: Server = createServer(
    { key: readFileSync(tls.keyFile), cert: readFileSync(tls.certFile) },
    handle,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const gitDir = (name: string) => {
    if (!VALID_NAME.test(name) || name.split('/').some((p) => p === '.' || p === '..')) {
      throw new Error(`invalid repository name: ${name}`);
    }
    return join(repos, `${name}.git`);
  };
  const bare = (name: string, args: string[]) => git(['--git-dir', gitDir(name), ...args], { env });
  const url = (name: string) => {
    gitDir(name);
    return `https://127.0.0.1:${port}/${name}.git`;
  };

  const writeFiles = (dir: string, files: Record<string, string>) => {
    for (const [path, content] of Object.entries(files)) {
      const file = join(dir, path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  };

  const createRepo: GitServer['createRepo'] = async (name, files, createOpts = {}) => {
    const dir = gitDir(name);
    await mkdir(dirname(dir), { recursive: true });
    await git(['init', '--quiet', '--bare', '--initial-branch=main', dir], { env });
    await bare(name, ['config', 'http.receivepack', 'true']);

    const work = await mkdtemp(join(root, 'work-'));
    const commitEnv = { ...env, ...IDENTITY };
    const inWork = (args: string[]) => git(args, { cwd: work, env: commitEnv });
    try {
      await inWork(['init', '--quiet', '--initial-branch=main']);
      writeFiles(work, files);
      await inWork(['add', '-A']);
      await inWork(['commit', '--quiet', '--allow-empty', '--no-gpg-sign', '-m', 'initial commit']);
      await inWork(['push', '--quiet', dir, 'main:refs/heads/main']);
      const head = (await inWork(['rev-parse', 'main'])).trim();
      const branchHeads: Record<string, string> = {};
      for (const [branch, branchFiles] of Object.entries(createOpts.branches ?? {})) {
        await inWork(['checkout', '--quiet', '-B', branch, 'main']);
        writeFiles(work, branchFiles);
        await inWork(['add', '-A']);
        await inWork([
          'commit',
          '--quiet',
          '--allow-empty',
          '--no-gpg-sign',
          '-m',
          `add ${branch}`,
        ]);
        await inWork(['push', '--quiet', dir, `${branch}:refs/heads/${branch}`]);
        branchHeads[branch] = (await inWork(['rev-parse', branch])).trim();
      }
      return { url: url(name), head, branchHeads };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };

  return {
    port,
    certFile: tls.certFile,
    root: repos,
    requests,
    url,
    createRepo,
    async log(name, ref) {
      const out = await bare(name, ['log', '--format=%s', ref, '--']);
      return out.split('\n').filter((l) => l !== '');
    },
    async refs(name) {
      const out = await bare(name, ['for-each-ref', '--format=%(refname) %(objectname)']);
      const refs: Record<string, string> = {};
      for (const line of out.split('\n')) {
        const [ref, sha] = line.split(' ');
        if (ref && sha) refs[ref] = sha;
      }
      return refs;
    },
    async show(name, ref, path) {
      return bare(name, ['show', `${ref}:${path}`]);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
      await rm(tls.dir, { recursive: true, force: true });
    },
  };
}
