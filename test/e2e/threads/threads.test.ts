/**
 * Multiagent sessions with threads, through the TypeScript SDK (core/src/threads,
 * workers/src/turn/threads.ts):
 * - a coordinator agent with two roster agents is stored resolved (each entry at its version);
 *   its session serves each roster agent's full definition;
 * - the scripted coordinator starts both threads; each writes a file into the shared sandbox
 *   and replies; the coordinator's turn waits for both replies, reads both files with bash and
 *   answers from them; the primary stream shows session.thread_created,
 *   agent.thread_message_sent, session.thread_status_running / _idle and
 *   agent.thread_message_received with the SDK's fields; one session.status_idle ends it all;
 * - threads.list / retrieve / archive and threads.events.list / stream; a thread's own log holds
 *   its task, its tool calls and its reply; the session's usage sums its threads';
 * - send_to_thread gives an idle thread its next message (it keeps its context);
 * - user.interrupt with session_thread_id stops that thread only; another session's thread id
 *   is a 404 and a 400 in an interrupt.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSessionEvent } from '@agentfleet/schemas';
import { readSse, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import {
  addModelCard,
  decide,
  say,
  sentText,
  useTool,
  userMessage,
} from '../../kit/turnHelpers.js';

const COORD = 'threads-coordinator';
const WA = 'threads-writer-a';
const WB = 'threads-writer-b';
let t: TestPlatform;
let envId: string;
let a: any;
let b: any;
let coord: any;

const toolsets = [{ type: 'agent_toolset_20260401' as const }];
/** The text the model was sent in its last request (every block, joined). */
/** A coordinator response chosen by what it has been told so far. */
/** A thread's agent: a roster agent here (the SDK's union also has the advisor and inline agents). */
const agentOf = (th: { agent: unknown }) =>
  th.agent as Anthropic.Beta.Agents.BetaManagedAgentsSessionThreadAgent;
const allEvents = async (sid: string, path = '') =>
  ((await (await t.http(`/v1/sessions/${sid}${path}/events?limit=1000`)).json()) as any)
    .data as any[];

beforeAll(async () => {
  t = await startPlatform();
  for (const m of [COORD, WA, WB]) await addModelCard(t, m);
  envId = (await t.client.beta.environments.create({ name: 'threads' })).id;
  a = await t.client.beta.agents.create({
    name: 'writer-a',
    description: 'writes a.txt',
    model: WA,
    system: 'You are writer A.',
    tools: toolsets,
  });
  b = await t.client.beta.agents.create({ name: 'writer-b', model: WB, tools: toolsets });
  coord = await t.client.beta.agents.create({
    name: 'coordinator',
    model: COORD,
    tools: toolsets,
    multiagent: { type: 'coordinator', agents: [a.id, { type: 'agent', id: b.id }] },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('coordinator agents', () => {
  it('stores the roster resolved; the session serves each member in full', async () => {
    expect(coord.multiagent).toEqual({
      type: 'coordinator',
      agents: [
        { type: 'agent', id: a.id, version: 1 },
        { type: 'agent', id: b.id, version: 1 },
      ],
    });
    const s = await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId });
    const m = s.agent.multiagent as any;
    expect(m.type).toBe('coordinator');
    expect(m.agents.map((x: any) => [x.type, x.id, x.version, x.name])).toEqual([
      ['agent', a.id, 1, 'writer-a'],
      ['agent', b.id, 1, 'writer-b'],
    ]);
    expect(m.agents[0]).toMatchObject({ system: 'You are writer A.', description: 'writes a.txt' });
    // A later edit of a roster agent does not reach the session's roster.
    await t.client.beta.agents.update(a.id, { version: 1, system: 'changed' });
    const again = await t.client.beta.sessions.retrieve(s.id);
    expect((again.agent.multiagent as any).agents[0].system).toBe('You are writer A.');
    // A thread list of a fresh session: its primary only.
    const threads = [];
    for await (const th of t.client.beta.sessions.threads.list(s.id)) threads.push(th);
    expect(threads.map((x) => [x.type, x.parent_thread_id, x.status])).toEqual([
      ['session_thread', null, 'idle'],
    ]);
  });
});

describe('a session with two threads', () => {
  let sid: string;
  let primary: any[];

  it('spawns both threads, which write into the shared sandbox; the coordinator answers from their replies', async () => {
    const s = await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId });
    sid = s.id;
    t.model.script(
      COORD,
      {
        steps: [
          {
            tool_use: { name: 'start_thread', input: { agent_name: 'writer-a', task: 'write a' } },
          },
          {
            tool_use: { name: 'start_thread', input: { agent_name: 'writer-b', task: 'write b' } },
          },
        ],
        stop_reason: 'tool_use',
      },
      // Until both replies arrived the coordinator waits; then it reads both files, then answers.
      ...Array.from({ length: 3 }, () =>
        decide((body) =>
          sentText(body).includes('A wrote') && sentText(body).includes('B wrote')
            ? useTool('bash', { command: 'cat /workspace/a.txt /workspace/b.txt' })
            : say('waiting for the threads'),
        ),
      ),
    );
    t.model.script(
      WA,
      useTool('write', { file_path: '/workspace/a.txt', content: 'alpha\n' }),
      say('A wrote a.txt'),
    );
    t.model.script(
      WB,
      useTool('write', { file_path: '/workspace/b.txt', content: 'beta\n' }),
      say('B wrote b.txt'),
    );
    const stream = await t.client.beta.sessions.events.stream(sid);
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('split the work')] });
    const seen: any[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    // Once the coordinator read the files it answers (the queue is empty: a bash result follows).
    primary = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 1 ? ev : null;
    });
    for (const e of primary) validateSessionEvent(e); // throws naming the field
    const idles = primary.filter((e) => e.type === 'session.status_idle');
    expect(idles).toHaveLength(1);
    expect(idles[0].stop_reason).toEqual({ type: 'end_turn' });
    expect(seen.filter((e) => e.type === 'session.status_idle')).toHaveLength(1);
    const created = primary.filter((e) => e.type === 'session.thread_created');
    expect(created.map((e) => e.agent_name).sort()).toEqual(['writer-a', 'writer-b']);
    for (const c of created) {
      expect(c.session_thread_id).toMatch(/^sthr_/);
      expect(c.workflow_run_id).toBeNull();
    }
    const ids = new Map(created.map((c) => [c.agent_name, c.session_thread_id]));
    const sent = primary.filter((e) => e.type === 'agent.thread_message_sent');
    expect(sent.map((e) => [e.to_session_thread_id, e.to_agent_name, e.content[0].text])).toEqual([
      [ids.get('writer-a'), 'writer-a', 'write a'],
      [ids.get('writer-b'), 'writer-b', 'write b'],
    ]);
    const received = primary.filter((e) => e.type === 'agent.thread_message_received');
    expect(
      received.map((e) => [e.from_session_thread_id, e.from_agent_name, e.content[0].text]).sort(),
    ).toEqual([
      [ids.get('writer-a'), 'writer-a', 'A wrote a.txt'],
      [ids.get('writer-b'), 'writer-b', 'B wrote b.txt'],
    ]);
    const running = primary.filter((e) => e.type === 'session.thread_status_running');
    const threadIdle = primary.filter((e) => e.type === 'session.thread_status_idle');
    expect(running).toHaveLength(2);
    expect(threadIdle.map((e) => e.stop_reason.type)).toEqual(['end_turn', 'end_turn']);
    // Each reply is announced idle right before it is delivered.
    for (const r of received) {
      const at = primary.indexOf(r);
      expect(primary[at - 1]).toMatchObject({
        type: 'session.thread_status_idle',
        session_thread_id: r.from_session_thread_id,
      });
    }
    // The coordinator's bash read both files the threads wrote: one sandbox.
    const bash = primary.find((e) => e.type === 'agent.tool_use' && e.name === 'bash');
    const result = primary.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === bash.id);
    expect(result.content[0].text).toContain('alpha');
    expect(result.content[0].text).toContain('beta');
    // The coordinator's final model request held both replies as user messages.
    const last = t.model.requests.filter((r) => r.model === COORD).at(-1)!;
    expect(sentText(last.body)).toContain('A wrote a.txt');
    expect(sentText(last.body)).toContain('B wrote b.txt');
    // Each thread ran its own agent: its system prompt, not the coordinator's roster prompt.
    const aReq = t.model.requests.find((r) => r.model === WA)!;
    expect(JSON.stringify(aReq.body.system)).toContain('You are writer A.');
    expect(JSON.stringify(aReq.body.system)).not.toContain('start_thread');
    expect((aReq.body.tools ?? []).map((x: any) => x.name)).not.toContain('start_thread');
    const cReq = t.model.requests.find((r) => r.model === COORD)!;
    expect(cReq.body.tools.map((x: any) => x.name)).toEqual(
      expect.arrayContaining(['start_thread', 'send_to_thread', 'bash']),
    );
  }, 120_000);

  it('lists, retrieves and reads the threads; the session usage sums them', async () => {
    const threads = [];
    for await (const th of t.client.beta.sessions.threads.list(sid)) threads.push(th);
    expect(threads).toHaveLength(3);
    const [p, ...children] = threads;
    expect(p!.parent_thread_id).toBeNull();
    expect(agentOf(p!).id).toBe(coord.id);
    for (const c of children) {
      expect(c).toMatchObject({
        type: 'session_thread',
        session_id: sid,
        parent_thread_id: p!.id,
        status: 'idle',
        archived_at: null,
        workflow_run_id: null,
      });
      expect(c.usage!.output_tokens).toBeGreaterThan(0);
    }
    expect(children.map((c) => agentOf(c).name).sort()).toEqual(['writer-a', 'writer-b']);
    const aThread = children.find((c) => agentOf(c).name === 'writer-a')!;
    const got = await t.client.beta.sessions.threads.retrieve(aThread.id, { session_id: sid });
    expect(got.id).toBe(aThread.id);
    expect(got.agent).toMatchObject({
      type: 'agent',
      id: a.id,
      version: 1,
      system: 'You are writer A.',
    });
    // A thread's own log: its task, its call, its answer, its reply to the primary.
    const own = [];
    for await (const e of t.client.beta.sessions.threads.events.list(aThread.id, {
      session_id: sid,
    }))
      own.push(e as any);
    const types = own.map((e) => e.type);
    expect(types[0]).toBe('agent.thread_message_received');
    expect(own[0]).toMatchObject({ from_session_thread_id: p!.id, content: [{ text: 'write a' }] });
    expect(types).toEqual(
      expect.arrayContaining(['agent.tool_use', 'agent.tool_result', 'agent.message']),
    );
    const reply = own.find((e) => e.type === 'agent.thread_message_sent');
    expect(reply).toMatchObject({
      to_session_thread_id: p!.id,
      content: [{ text: 'A wrote a.txt' }],
    });
    expect(types.at(-1)).toBe('session.status_idle');
    // The primary thread's events are the session's.
    const prim = [];
    for await (const e of t.client.beta.sessions.threads.events.list(p!.id, { session_id: sid }))
      prim.push(e as any);
    expect(prim.map((e) => e.id)).toEqual(primary.map((e) => e.id));
    // The session's usage is every thread's.
    const s = await t.client.beta.sessions.retrieve(sid);
    const sum = [p!, ...children].reduce((n, th) => n + (th.usage?.output_tokens ?? 0), 0);
    expect(s.usage.output_tokens).toBe(sum);
    // The thread's stream replays its log (SSE) and its list filter by status works.
    const res = await t.http(`/v1/sessions/${sid}/threads/${aThread.id}/stream?replay=1`);
    const frames = await readSse(res, (f) => f.data?.type === 'session.status_idle');
    await res.body?.cancel().catch(() => {});
    expect(frames.map((f) => f.data?.id).filter(Boolean)).toEqual(own.map((e) => e.id));
    const idleOnly = [];
    for await (const th of t.client.beta.sessions.threads.list(sid, { statuses: ['running'] }))
      idleOnly.push(th);
    expect(idleOnly).toHaveLength(0);
  });

  it('send_to_thread gives an idle thread its next message; archive ends it', async () => {
    const threads = [];
    for await (const th of t.client.beta.sessions.threads.list(sid)) threads.push(th);
    const bThread = threads.find((c) => agentOf(c).name === 'writer-b')!;
    t.model.script(
      COORD,
      useTool('send_to_thread', { session_thread_id: bThread.id, message: 'once more' }),
      decide((body) => (sentText(body).includes('B again') ? say('all done') : say('waiting'))),
      decide((body) => (sentText(body).includes('B again') ? say('all done') : say('waiting'))),
    );
    t.model.script(WB, say('B again'));
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('ask b again')] });
    const events = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 2 ? ev : null;
    }, 60_000);
    const lastAnswer = events.filter((e) => e.type === 'agent.message').at(-1);
    expect(lastAnswer.content[0].text).toBe('all done');
    // B kept its context: its second request holds its first task and answer.
    const bReq = t.model.requests.filter((r) => r.model === WB).at(-1)!;
    expect(sentText(bReq.body)).toContain('write b');
    expect(sentText(bReq.body)).toContain('once more');
    // Archive: the primary cannot be; an idle child can (idempotent), then takes no message.
    const p = threads[0]!;
    await expect(
      t.client.beta.sessions.threads.archive(p.id, { session_id: sid }),
    ).rejects.toMatchObject({ status: 400 });
    const archived = await t.client.beta.sessions.threads.archive(bThread.id, { session_id: sid });
    expect(archived.archived_at).not.toBeNull();
    const twice = await t.client.beta.sessions.threads.archive(bThread.id, { session_id: sid });
    expect(twice.archived_at).toBe(archived.archived_at);
    t.model.script(
      COORD,
      useTool('send_to_thread', { session_thread_id: bThread.id, message: 'again?' }),
      say('ok'),
    );
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('try b')] });
    const after = await waitFor(async () => {
      const ev = await allEvents(sid);
      return ev.filter((e) => e.type === 'session.status_idle').length >= 3 ? ev : null;
    }, 60_000);
    const refused = after.filter((e) => e.type === 'agent.tool_result').at(-1);
    expect(refused.is_error).toBe(true);
    expect(refused.content[0].text).toContain('archived');
  }, 120_000);

  it('another session or tenant cannot reach a thread', async () => {
    const threads = [];
    for await (const th of t.client.beta.sessions.threads.list(sid)) threads.push(th);
    const child = threads[1]!;
    const other = await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId });
    await expect(
      t.client.beta.sessions.threads.retrieve(child.id, { session_id: other.id }),
    ).rejects.toMatchObject({ status: 404 });
    const res = await t.http(`/v1/sessions/${other.id}/threads/${child.id}/events`);
    expect(res.status).toBe(404);
    // A thread is no session.
    expect((await t.http(`/v1/sessions/${child.id}`)).status).toBe(404);
    const listed = [];
    for await (const s of t.client.beta.sessions.list()) listed.push(s.id);
    expect(listed).not.toContain(child.id);
    const stranger = await t.newTenant('threads-stranger');
    await expect(
      stranger.client.beta.sessions.threads.list(sid).then((p) => p.data),
    ).rejects.toMatchObject({ status: 404 });
    // An interrupt naming another session's thread is refused naming the field.
    const bad = await t.http(`/v1/sessions/${other.id}/events`, {
      method: 'POST',
      json: { events: [{ type: 'user.interrupt', session_thread_id: child.id }] },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain('events[0].session_thread_id');
  });
});

describe('interrupting one thread', () => {
  it('stops that thread only; the coordinator gets its interrupted reply and answers', async () => {
    const s = await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId });
    t.model.script(
      COORD,
      useTool('start_thread', { agent_name: 'writer-a', task: 'take your time' }),
      ...Array.from({ length: 2 }, () =>
        decide((body) =>
          sentText(body).includes('interrupted') ? say('a was stopped') : say('waiting'),
        ),
      ),
    );
    t.model.script(WA, { steps: [{ delay_ms: 20_000 }, { text: 'too late' }] });
    await t.client.beta.sessions.events.send(s.id, { events: [userMessage('start a')] });
    const created = await waitFor(async () =>
      (await allEvents(s.id)).find((e) => e.type === 'session.thread_created'),
    );
    const tid = created.session_thread_id;
    await waitFor(async () =>
      t.model.requests.some((r) => r.model === WA && sentText(r.body).includes('take your time')),
    );
    await t.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.interrupt', session_thread_id: tid }],
    });
    const events = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
    }, 60_000);
    const idle = events.find((e) => e.type === 'session.status_idle');
    expect(idle.interrupted).toBeUndefined(); // the primary was not interrupted
    expect(events.filter((e) => e.type === 'agent.message').at(-1).content[0].text).toBe(
      'a was stopped',
    );
    const own = await allEvents(s.id, `/threads/${tid}`);
    const threadIdle = own.find((e) => e.type === 'session.status_idle');
    expect(threadIdle.interrupted).toBe(true);
    expect(own.some((e) => e.type === 'agent.message')).toBe(false);
  }, 90_000);
});

describe('interrupting the whole session', () => {
  it('stops the primary and every running thread; the session ends idle, interrupted', async () => {
    const s = await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId });
    t.model.script(
      COORD,
      {
        steps: [
          { tool_use: { name: 'start_thread', input: { agent_name: 'writer-a', task: 'slow a' } } },
          { tool_use: { name: 'start_thread', input: { agent_name: 'writer-b', task: 'slow b' } } },
        ],
        stop_reason: 'tool_use',
      },
      say('waiting'),
    );
    t.model.script(WA, { steps: [{ delay_ms: 20_000 }, { text: 'late a' }] });
    t.model.script(WB, { steps: [{ delay_ms: 20_000 }, { text: 'late b' }] });
    await t.client.beta.sessions.events.send(s.id, { events: [userMessage('start both')] });
    await waitFor(async () =>
      ['slow a', 'slow b'].every((task) =>
        t.model.requests.some((r) => sentText(r.body).includes(task)),
      ),
    );
    await t.client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt' }] });
    const events = await waitFor(async () => {
      const ev = await allEvents(s.id);
      return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
    }, 30_000);
    expect(events.find((e) => e.type === 'session.status_idle').interrupted).toBe(true);
    const threads = (await t.client.beta.sessions.threads.list(s.id)).data;
    expect(threads).toHaveLength(3);
    for (const th of threads.slice(1)) {
      const own = await waitFor(async () => {
        const ev = await allEvents(s.id, `/threads/${th.id}`);
        return ev.some((e) => e.type === 'session.status_idle') ? ev : null;
      });
      expect(own.some((e) => e.type === 'user.interrupt')).toBe(true);
      expect(own.find((e) => e.type === 'session.status_idle').interrupted).toBe(true);
      expect(own.some((e) => e.type === 'agent.message')).toBe(false);
    }
    // Nothing runs on: every thread is idle.
    await waitFor(async () =>
      (await t.client.beta.sessions.threads.list(s.id)).data.every((th) => th.status === 'idle'),
    );
  }, 90_000);
});
