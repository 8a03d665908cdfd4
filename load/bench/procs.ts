/**
 * Child processes of the bench: the scripted model in its own process (startModelProcess, the
 * model of every platform the bench starts), and platform processes for the worker-scaling
 * section: the built `server/dist/cli.js <role>` run as real child processes, as `npm start` and
 * the fleet roles run it (test/kit/process.ts startProcess runs the sources instead). Unlike that
 * helper, a process that fails to start is killed before the error is thrown, and every
 * process started here is tracked so it can be stopped
 * at the end (SIGTERM, then SIGKILL) and is SIGKILLed when this process exits by any route
 * (including the run's watchdog).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/**
 * How a bench child runs: its TypeScript through tsx, the platform's packages resolved to their
 * built `dist/` (no `source` condition), the code `npm start` and the fleet roles run.
 */
export const BENCH_CHILD_EXEC_ARGV = ['--import', 'tsx'];

/** The built CLI, as `npm start` and the fleet roles run it (`npm run bench` builds first). */
const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
const MODEL_CHILD = fileURLToPath(new URL('./modelChild.ts', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 8_000;
const OUTPUT_LIMIT = 20_000;

export interface PlatformProcess {
  role: 'all' | 'gateway' | 'worker';
  pid: number;
  /** http://127.0.0.1:<port>: the REST API of a gateway, /healthz, /readyz and /metrics of a worker. */
  url: string;
  child: ChildProcess;
  /** The last few KB of its stdout and stderr. */
  output(): string;
}

/** Every live child started here; SIGKILLed synchronously if this process exits with them still running. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of live) {
      try {
        c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

function waitExit(c: ChildProcess, ms: number): Promise<boolean> {
  if (exited(c)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      c.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    c.once('exit', onExit);
  });
}

/** SIGTERM (the platform shuts down gracefully: Kafka consumers leave their group), SIGKILL after a grace period. */
export async function stopProcess(c: ChildProcess): Promise<void> {
  if (!exited(c)) {
    c.kill('SIGTERM');
    if (!(await waitExit(c, STOP_GRACE_MS))) {
      c.kill('SIGKILL');
      await waitExit(c, 5_000);
    }
  }
  live.delete(c);
}

/** Starts one platform process on 127.0.0.1 and waits until it prints "started" (bounded). */
export async function startPlatformProcess(
  role: 'all' | 'gateway' | 'worker',
  env: Record<string, string>,
): Promise<PlatformProcess> {
  installExitHook();
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, role], {
    cwd: REPO,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let out = '';
  const append = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > OUTPUT_LIMIT) out = out.slice(-OUTPUT_LIMIT);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`${role} did not start within ${START_TIMEOUT_MS / 1000} s`)),
        START_TIMEOUT_MS,
      );
      const check = () => {
        if (/\bstarted\b/.test(out)) finish();
      };
      const onExit = (code: number | null, signal: string | null) =>
        finish(new Error(`${role} exited (${signal ?? code}) before it started`));
      const onError = (err: Error) => finish(err);
      function finish(err?: Error) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.off('exit', onExit);
        child.off('error', onError);
        if (err) reject(err);
        else resolve();
      }
      child.stdout!.on('data', check);
      child.once('exit', onExit);
      child.once('error', onError);
      check();
    });
  } catch (err) {
    child.kill('SIGKILL');
    await waitExit(child, 5_000);
    live.delete(child);
    throw new Error(`${(err as Error).message}:\n${out.slice(-4000)}`);
  }
  return { role, pid: child.pid!, url: `http://127.0.0.1:${port}`, child, output: () => out };
}

/** The scripted model in its own process (modelChild.ts). */
export interface ModelProcess {
  /** http://127.0.0.1:<port>, the platform's ANTHROPIC_BASE_URL. */
  url: string;
  /** The process (its IPC channel: threadsModelChild.ts takes scripts over it). */
  child: ChildProcess;
  close(): Promise<void>;
}

/**
 * Starts the scripted model in a process of its own, where a model provider is for a real
 * platform: its HTTP parsing and answers then use the machine's other core, not the platform's
 * event loop. Bounded like a platform process; SIGKILLed if this process exits first.
 */
export async function startModelProcess(entry = MODEL_CHILD): Promise<ModelProcess> {
  installExitHook();
  const child = fork(entry, [], {
    cwd: REPO,
    execArgv: BENCH_CHILD_EXEC_ARGV,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`scripted model did not start within ${START_TIMEOUT_MS / 1000} s`)),
        START_TIMEOUT_MS,
      );
      child.once('message', (m: { url: string }) => {
        clearTimeout(timer);
        resolve(m.url);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`scripted model exited (${code}) before it started`));
      });
    });
    return { url, child, close: () => stopProcess(child) };
  } catch (err) {
    child.kill('SIGKILL');
    await waitExit(child, 5_000);
    live.delete(child);
    throw err;
  }
}

/**
 * Runs a bench child (a TypeScript module under load/bench, through tsx) that answers with one
 * IPC message `{ result }` or `{ error }`; resolves with the result. The child is SIGKILLed past
 * `boundMs`; an exit without an answer rejects. `label` names the child in the errors.
 */
export function runResultChild<T>(
  entry: URL,
  args: string[],
  label: string,
  opts: { boundMs: number; execArgv?: string[] },
): Promise<T> {
  const child = fork(fileURLToPath(entry), args, {
    execArgv: [...(opts.execArgv ?? []), ...BENCH_CHILD_EXEC_ARGV],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} still running after ${opts.boundMs / 1000} s`));
    }, opts.boundMs);
    child.on('message', (m: { result?: T; error?: string }) => {
      clearTimeout(timer);
      if (m.result) resolve(m.result);
      else reject(new Error(m.error ?? `${label} failed`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with code ${code}`));
    });
  });
}
