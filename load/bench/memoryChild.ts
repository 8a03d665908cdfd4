/**
 * The child process of section i (memory.ts): runs the whole platform (embedded adapters, temp
 * data dir, scripted zero-latency model) under `node --expose-gc`, measures its memory after a
 * full GC with no session, with N idle sessions and with M idle local sandboxes, and sends the
 * figures to its parent over IPC. Idle session: created, one finished turn (the model answers
 * text), no open stream. Idle sandbox: a session whose one turn ran `bash true` (the sandbox
 * starts and stays warm for SANDBOX_SLEEP_AFTER_MS, 5 min by default), turn finished.
 * The sandboxes' own memory is read from /proc over this process's descendants (VmRSS and Pss).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { startBenchPlatform, type BenchPlatform } from './context.js';

export interface MemorySample {
  rssKb: number;
  heapUsedKb: number;
  /** Summed over this process's descendant processes (the sandboxes): VmRSS and Pss. */
  childRssKb: number;
  childPssKb: number;
  children: number;
}

export interface MemoryChildResult {
  startup: MemorySample;
  base: MemorySample;
  sessions: { n: number; after: MemorySample; ms: number };
  /** null when bwrap is not available (reason in `sandboxSkipped`). */
  sandboxes: { m: number; before: MemorySample; after: MemorySample; ms: number } | null;
  sandboxSkipped?: string;
}

const MODEL = 'claude-sonnet-4-5';
const TURN_TIMEOUT_MS = 30_000;
const MESSAGE = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] };

/** pid → ppid of every process readable in /proc. */
function processTable(): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may contain spaces, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.set(Number(name), ppid);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function descendants(root: number): number[] {
  const table = processTable();
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const parent = queue.pop()!;
    for (const [pid, ppid] of table)
      if (ppid === parent) {
        found.push(pid);
        queue.push(pid);
      }
  }
  return found;
}

function kbField(path: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(path, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function sample(): MemorySample {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('memory bench: run with --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  const kids = descendants(process.pid);
  return {
    rssKb: Math.round(m.rss / 1024),
    heapUsedKb: Math.round(m.heapUsed / 1024),
    childRssKb: kids.reduce((a, pid) => a + kbField(`/proc/${pid}/status`, 'VmRSS'), 0),
    childPssKb: kids.reduce((a, pid) => a + kbField(`/proc/${pid}/smaps_rollup`, 'Pss'), 0),
    children: kids.length,
  };
}

async function idleEvents(p: BenchPlatform, sessionId: string): Promise<number> {
  const r = await p.json<{ data: Array<{ type: string }> }>(
    'GET',
    `/v1/sessions/${sessionId}/events?limit=100`,
  );
  if (r.status !== 200) throw new Error(`events of ${sessionId}: HTTP ${r.status}`);
  return r.body.data.filter((e) => e.type === 'session.status_idle').length;
}

/** Sends one message and waits for the turn's session.status_idle (polling the event list). */
async function oneTurn(p: BenchPlatform, sessionId: string): Promise<void> {
  const before = await idleEvents(p, sessionId);
  const sent = await p.json('POST', `/v1/sessions/${sessionId}/events`, MESSAGE);
  if (sent.status >= 300) throw new Error(`message to ${sessionId}: HTTP ${sent.status}`);
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  while ((await idleEvents(p, sessionId)) <= before) {
    if (Date.now() > deadline) throw new Error(`turn of ${sessionId}: not idle after 30 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function idleSessions(p: BenchPlatform, agentId: string, envId: string, n: number) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const s = await p.json<{ id: string }>('POST', '/v1/sessions', {
        agent: agentId,
        environment_id: envId,
      });
      if (s.status !== 200) throw new Error(`create session: HTTP ${s.status}`);
      await oneTurn(p, s.body.id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function run(n: number, m: number, noSandbox: string | null): Promise<MemoryChildResult> {
  // The model in this process: the sandbox turns script a tool call (below).
  const p = await startBenchPlatform(
    { SANDBOX_DRIVER: noSandbox ? 'none' : 'local' },
    {},
    { inlineModel: true },
  );
  try {
    const startup = sample();
    const agent = await p.json<{ id: string }>('POST', '/v1/agents', {
      name: 'memory-bench',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const env = await p.json<{ id: string }>('POST', '/v1/environments', {
      name: `memory-bench-${process.pid}`,
    });
    if (agent.status !== 200 || env.status !== 200) throw new Error('memory bench: setup failed');
    // Warm-up (JIT, caches, first-use allocations) so the deltas below are per session only.
    await idleSessions(p, agent.body.id, env.body.id, 20);
    const base = sample();
    const t0 = performance.now();
    await idleSessions(p, agent.body.id, env.body.id, n);
    const ms = performance.now() - t0;
    const after = sample();
    const result: MemoryChildResult = {
      startup,
      base,
      sessions: { n, after, ms },
      sandboxes: null,
    };
    if (noSandbox) return { ...result, sandboxSkipped: noSandbox };

    const sandboxSession = async () => {
      const s = await p.json<{ id: string }>('POST', '/v1/sessions', {
        agent: agent.body.id,
        environment_id: env.body.id,
      });
      if (s.status !== 200) throw new Error(`create session: HTTP ${s.status}`);
      // The fixture also scripts tool calls (test/kit/fixtures/scriptedModel.ts ScriptStep).
      (p.model!.script as (model: string, ...r: unknown[]) => void)(
        MODEL,
        { steps: [{ tool_use: { name: 'bash', input: { command: 'true' } } }] },
        { steps: [{ text: 'done' }] },
      );
      await oneTurn(p, s.body.id);
    };
    await sandboxSession(); // warm-up: first sandbox start (layout, caches)
    const before = sample();
    const t1 = performance.now();
    for (let i = 0; i < m; i++) await sandboxSession();
    const sandboxMs = performance.now() - t1;
    const withSandboxes = sample();
    return { ...result, sandboxes: { m, before, after: withSandboxes, ms: sandboxMs } };
  } finally {
    await p.close();
  }
}

// argv: <sessions> <sandboxes> [reason the sandboxes are skipped]
const [n, m, noSandbox] = process.argv.slice(2);
run(Number(n), Number(m), noSandbox || null).then(
  (r) => process.send!({ result: r }, () => process.exit(0)),
  (err: Error) => process.send!({ error: err.stack ?? String(err) }, () => process.exit(1)),
);
