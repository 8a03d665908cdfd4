/**
 * The sandbox trust boundary through the SDK, on the local driver (real bwrap, cgroups and a
 * loop-mounted disk; the scripted model plays the attacker's agent): the bash tool finds no
 * platform secret in env, /proc/1/environ, /proc/*\/environ or /proc/*\/cmdline; a fork bomb
 * (under `timeout`), a memory hog and a disk filler each end in an `is_error` tool result, the
 * session's next turn works, and another session keeps working while the attack runs; the
 * sandbox agent (PID 2) cannot be reached from a command: ptrace, pidfd_getfd and
 * process_vm_readv fail with EPERM, its /proc mem, fd and environ are closed, and bwrap's PID 1
 * holds no descriptor of the channel.
 * Small operator caps (SANDBOX_MAX_*) keep each attack quick and bounded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

const call = (name: string, input: Record<string, unknown>) => ({
  steps: [{ tool_use: { name, input } }],
});
const say = (text: string) => ({ steps: [{ text }] });
const ROOT_SECRET = 'isolation-root-secret-5b0c7e1d9a2f4c6e8b3d';
const VENDOR_KEY = 'sk-ant-isolation-vendor-key-77f3';

let t: TestPlatform;
let envId: string;

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'local',
      PLATFORM_ROOT_SECRET: ROOT_SECRET,
      ANTHROPIC_API_KEY: VENDOR_KEY,
      SANDBOX_MAX_PROCESSES: '64',
      SANDBOX_MAX_MEMORY_MB: '160',
      SANDBOX_MAX_DISK_MB: '64',
    },
  });
  envId = (await t.client.beta.environments.create({ name: 'isolated' })).id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** A session whose agent uses its own scripted model (sessions run concurrently). */
async function newSession(model: string) {
  await t.http('/v1/svc/model_cards', {
    method: 'POST',
    headers: { 'anthropic-beta': 'managed-agents-2026-04-01' },
    json: { model_id: model, provider: 'anthropic', model, base_url: t.model.url, api_key: 'k' },
  });
  const agent = await t.client.beta.agents.create({
    name: model,
    model,
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  return (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
}

async function turn(sid: string, text: string) {
  const stream = await t.client.beta.sessions.events.stream(sid);
  await t.client.beta.sessions.events.send(sid, {
    events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
  });
  const seen: any[] = [];
  for await (const ev of stream) {
    seen.push(ev);
    if (ev.type === 'session.status_idle') break;
  }
  return seen
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => ({ text: e.content[0].text as string, is_error: e.is_error as boolean }));
}

/** The cgroup directories of the sandbox of `sid` on this host (named after the session). */
const sandboxCgroups = (sid: string): string[] =>
  execFileSync(
    'find',
    ['/sys/fs/cgroup', '-maxdepth', '6', '-type', 'd', '-name', `agentfleet-sbx-*-local-${sid}-*`],
    { encoding: 'utf8' },
  )
    .split('\n')
    .filter(Boolean);

/** Forks refused at the process cap in the sandbox of `sid` (its pids cgroup). */
function forksRefused(sid: string): number {
  for (const dir of sandboxCgroups(sid))
    if (existsSync(`${dir}/pids.events`))
      return Number(/max (\d+)/.exec(readFileSync(`${dir}/pids.events`, 'utf8'))?.[1] ?? 0);
  return 0;
}

/** The host uids of the processes in the sandbox of `sid` (from its cgroups on this host). */
function sandboxHostUids(sid: string): number[] {
  const uids = new Set<number>();
  for (const dir of sandboxCgroups(sid)) {
    if (!existsSync(`${dir}/cgroup.procs`)) continue;
    for (const pid of readFileSync(`${dir}/cgroup.procs`, 'utf8').split('\n').filter(Boolean)) {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        uids.add(Number(/^Uid:\s+(\d+)/m.exec(status)![1]));
      } catch {
        /* exited meanwhile */
      }
    }
  }
  return [...uids];
}

/** One bash call, then the model's closing text. */
async function bash(sid: string, model: string, command: string) {
  t.model.script(model, call('bash', { command }), say('done'));
  const results = await turn(sid, `run: ${command.slice(0, 40)}`);
  expect(results).toHaveLength(1);
  return results[0]!;
}

/** Run inside the sandbox by the channel test: what a command can do to the agent, as JSON. */
const CHANNEL_ATTACK = String.raw`import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
agent = 2
out = {"agent_cmdline": open("/proc/2/cmdline", "rb").read().decode(errors="replace")}
def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(*args)
    out[name] = "ok" if r >= 0 else os.strerror(ctypes.get_errno())
    return r
call("ptrace_attach", 101, 16, agent, 0, 0)
call("process_vm_readv", 310, agent, 0, 0, 0, 0, 0)
pidfd = call("pidfd_open", 434, agent, 0)
if pidfd >= 0:
    call("pidfd_getfd", 438, pidfd, 4, 0)
    os.close(pidfd)
for what in ("mem", "environ"):
    try:
        with open("/proc/%d/%s" % (agent, what), "rb") as f:
            f.read(16)
        out[what] = "read"
    except OSError as e:
        out[what] = e.strerror
try:
    out["fd"] = os.readlink("/proc/%d/fd/4" % agent)
except OSError as e:
    out["fd"] = e.strerror
out["pid1_fds"] = sorted(int(n) for n in os.listdir("/proc/1/fd"))
own = {}
for n in os.listdir("/proc/self/fd"):
    try:
        own[n] = os.readlink("/proc/self/fd/" + n)
    except OSError:
        pass
out["own_fds"] = own
print(json.dumps(out))
`;

describe('a tenant agent in its sandbox (local driver)', () => {
  it('cannot reach the sandbox agent: ptrace, pidfd_getfd, process_vm_readv, /proc mem, fd and environ refused', async () => {
    const sid = await newSession('iso-channel');
    const r = await bash(
      sid,
      'iso-channel',
      `cat > /tmp/attack.py <<'EOF'\n${CHANNEL_ATTACK}EOF\npython3 /tmp/attack.py`,
    );
    expect(r.is_error).toBe(false);
    const seen = JSON.parse(r.text.split('\n').find((l) => l.startsWith('{'))!);
    expect(seen.agent_cmdline).toContain('/opt/agentfleet/agent.mjs');
    expect(seen).toMatchObject({
      ptrace_attach: 'Operation not permitted',
      process_vm_readv: 'Operation not permitted',
      pidfd_open: 'ok',
      pidfd_getfd: 'Operation not permitted',
      mem: 'Permission denied',
      environ: 'Permission denied',
      fd: 'Permission denied',
    });
    // bwrap's init keeps its stdio (the null device, the host's stderr log) and one eventfd,
    // never the channel (descriptor 4); a command holds its own stdio and nothing inherited
    expect(seen.pid1_fds).not.toContain(4);
    expect(seen.pid1_fds.filter((fd: number) => fd > 2).length).toBeLessThanOrEqual(1);
    expect(Object.keys(seen.own_fds).sort()).toEqual(['0', '1', '2']);
    // the session goes on
    expect(await bash(sid, 'iso-channel', 'echo fine')).toMatchObject({ is_error: false });
  }, 60_000);

  it('finds no platform secret in env, /proc/1/environ, /proc/*/environ or /proc/*/cmdline', async () => {
    const sid = await newSession('iso-secrets');
    const r = await bash(
      sid,
      'iso-secrets',
      "env; tr '\\0' '\\n' < /proc/1/environ; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo \"== $f\"; tr '\\0' ' ' < $f; echo; done",
    );
    expect(r.is_error).toBe(false);
    expect(r.text).toContain('== /proc/1/cmdline');
    expect(r.text).toContain('HOME=/home/user');
    for (const secret of [t.operatorKey, ROOT_SECRET, VENDOR_KEY, t.dataDir])
      expect(r.text).not.toContain(secret);
  });

  it('runs as the unprivileged sandbox host uid, not root: every process of the sandbox, seen from the host', async () => {
    const sid = await newSession('iso-uid');
    const r = await bash(sid, 'iso-uid', 'id -u; echo x > /workspace/f && stat -c %u /workspace/f');
    expect(r).toMatchObject({ is_error: false, text: expect.stringMatching(/^1000\n1000\n/) });
    const uids = sandboxHostUids(sid);
    expect(uids.length).toBeGreaterThan(0);
    // root runs the platform here (CI): the sandbox is SANDBOX_HOST_UID's default, never uid 0
    expect(uids).toEqual([process.getuid?.() === 0 ? 100_000 : process.getuid!()]);
  });

  it('a fork bomb under timeout: an is_error result, the next turn works, another session works meanwhile', async () => {
    const victim = await newSession('iso-bomb');
    const bystander = await newSession('iso-bystander');
    await bash(bystander, 'iso-bystander', 'echo before > /workspace/b.txt');
    const attack = bash(victim, 'iso-bomb', "timeout -s KILL 5 bash -c ':(){ :|:& };:'");
    // the bomb runs into its sandbox's process cap (seen from the host: the sandbox's pids cgroup)…
    await expect
      .poll(() => forksRefused(victim), { timeout: 20_000, interval: 100 })
      .toBeGreaterThan(0);
    // …and meanwhile another session's turn runs
    const during = await bash(bystander, 'iso-bystander', 'cat /workspace/b.txt; echo during');
    expect(during).toMatchObject({
      is_error: false,
      text: expect.stringMatching(/^before\nduring\n/),
    });
    const r = await attack;
    expect(r.is_error).toBe(true);
    expect(r.text).toMatch(/process limit \(64\) was reached/);
    // the session goes on: the runaway processes were killed, its sandbox runs commands again
    const next = await bash(victim, 'iso-bomb', 'echo after');
    expect(next).toMatchObject({ is_error: false, text: expect.stringMatching(/^after\n/) });
  }, 90_000);

  it('a memory hog: OOM-killed inside its sandbox, an is_error result, the next turn works', async () => {
    const sid = await newSession('iso-hog');
    const r = await bash(sid, 'iso-hog', 'x=$(head -c 600m /dev/zero | tr "\\0" a); echo ${#x}');
    expect(r.is_error).toBe(true);
    expect(r.text).toMatch(/memory limit \(160 MB\) was reached/);
    expect(await bash(sid, 'iso-hog', 'echo still-here')).toMatchObject({
      is_error: false,
      text: expect.stringMatching(/^still-here\n/),
    });
  }, 90_000);

  it('a disk filler: ENOSPC at the sandbox quota, an is_error result, the next turn works', async () => {
    const sid = await newSession('iso-disk');
    const r = await bash(sid, 'iso-disk', 'head -c 200m /dev/zero > /workspace/fill');
    expect(r.is_error).toBe(true);
    expect(r.text).toMatch(/No space left on device/);
    const next = await bash(
      sid,
      'iso-disk',
      'rm /workspace/fill; echo freed > /tmp/t && cat /tmp/t',
    );
    expect(next).toMatchObject({ is_error: false, text: expect.stringMatching(/^freed\n/) });
  }, 90_000);
});
