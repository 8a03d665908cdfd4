/**
 * Session threads in GraphQL (gateway/src/graphql/threads.ts), on a coordinator session driven
 * by the scripted model:
 * - `Session.threads` and `sessionThreads` serve REST's threads (the primary first, then the
 *   children), camelCased; `sessionThread` one of them; a status filter is REST's;
 * - `threadEvents` is a child thread's own log (its task first, its reply, its idle), equal to
 *   REST's GET …/threads/:thread_id/events; the primary's are the session's;
 * - the `sessionEvents` subscription with `threadId` replays one thread's log (afterSeq) and
 *   follows it live (without afterSeq), never the primary's events;
 * - another tenant's session, and another session's thread id, are NOT_FOUND on every field
 *   and in the subscription; a threads page size counts in the cost limit.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from 'graphql-sse';
import { waitFor, type TestPlatform } from '../../kit/harness.js';
import {
  addModelCard,
  decide,
  say,
  sentText,
  useTool,
  userMessage,
} from '../../kit/turnHelpers.js';
import type { ScriptedResponse } from '../../kit/fixtures/scriptedModel.js';
import { EVENT, gql, ok, sseClient, useGraphqlPlatform } from './graphqlHelpers.js';

const COORD = 'gql-threads-coordinator';
const WA = 'gql-threads-writer-a';
const WB = 'gql-threads-writer-b';
const platform = useGraphqlPlatform();
let t: TestPlatform;
let envId: string;
let coord: any;
let sid: string;

const toolsets = [{ type: 'agent_toolset_20260401' as const }];
let aId = '';
/**
 * The coordinator's every response after its first, chosen from what it was told so far (one
 * left over from a turn serves the next alike): once asked, it sends A a second message and
 * waits for A's reply; before that it answers once both threads replied.
 */
const lead = (body: any): ScriptedResponse => {
  const told = sentText(body);
  if (told.includes('ask A again')) {
    if (told.includes('A replies twice')) return say('done');
    if (!told.includes('once more, A'))
      return useTool('send_to_thread', { session_thread_id: aId, message: 'once more, A' });
    return say('waiting for A');
  }
  return told.includes('A says hi') && told.includes('B says hi')
    ? say('both answered')
    : say('waiting for the threads');
};
const leadTurns = () => Array.from({ length: 4 }, () => decide(lead));
const restEvents = async (path: string) =>
  ((await (await t.http(`/v1/sessions/${path}/events?limit=1000`)).json()) as any).data as any[];
const idles = async (id: string) =>
  (await restEvents(id)).filter((e) => e.type === 'session.status_idle').length;

const THREAD = `id type sessionId parentThreadId status archivedAt createdAt updatedAt
  agent { id version name system model { id } }
  usage { inputTokens outputTokens cacheReadInputTokens cacheCreationInputTokens activeSeconds }
  stats { activeSeconds durationSeconds startupSeconds }`;
/** A thread without its durationSeconds (which grows while the session lives). */
const still = (n: any) => ({ ...n, stats: n.stats && { ...n.stats, durationSeconds: 0 } });
const SUBSCRIBE = `subscription($s: ID!, $th: ID, $after: Int) {
  sessionEvents(sessionId: $s, threadId: $th, afterSeq: $after) { ${EVENT} } }`;

/** Collects one subscription's events until `until` (or its first error). */
function follow(variables: Record<string, unknown>, until: (ev: any) => boolean, key?: string) {
  const client = sseClient(key);
  let onConnected!: () => void;
  const connected = new Promise<void>((r) => (onConnected = r));
  const it = client.iterate<{ sessionEvents: any }>(
    { query: SUBSCRIBE, variables },
    { connected: () => onConnected() },
  );
  const events = (async () => {
    const seen: any[] = [];
    const timer = setTimeout(() => void it.return?.(), 30_000);
    try {
      for await (const r of it as AsyncIterable<ExecutionResult<{ sessionEvents: any }>>) {
        if (r.errors) return { seen, errors: r.errors as any[] };
        seen.push(r.data!.sessionEvents);
        if (until(r.data!.sessionEvents)) break;
      }
    } finally {
      clearTimeout(timer);
      await it.return?.();
      client.dispose();
    }
    return { seen, errors: undefined };
  })();
  return { connected, events };
}

beforeAll(async () => {
  ({ t, envId } = platform());
  for (const m of [COORD, WA, WB]) await addModelCard(t, m);
  const a = await t.client.beta.agents.create({
    name: 'gql-writer-a',
    model: WA,
    system: 'You are writer A.',
    tools: toolsets,
  });
  const b = await t.client.beta.agents.create({ name: 'gql-writer-b', model: WB, tools: toolsets });
  coord = await t.client.beta.agents.create({
    name: 'gql-coordinator',
    model: COORD,
    tools: toolsets,
    multiagent: { type: 'coordinator', agents: [a.id, b.id] },
  });
  sid = (await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId })).id;
  t.model.script(
    COORD,
    {
      steps: [
        {
          tool_use: { name: 'start_thread', input: { agent_name: 'gql-writer-a', task: 'task a' } },
        },
        {
          tool_use: { name: 'start_thread', input: { agent_name: 'gql-writer-b', task: 'task b' } },
        },
      ],
      stop_reason: 'tool_use',
    },
    ...leadTurns(),
  );
  t.model.script(WA, say('A says hi'));
  t.model.script(WB, say('B says hi'));
  await t.client.beta.sessions.events.send(sid, { events: [userMessage('split it')] });
  await waitFor(async () => (await idles(sid)) >= 1, 60_000);
}, 120_000);

describe('session threads in GraphQL', () => {
  it('Session.threads, sessionThreads and sessionThread serve the REST threads', async () => {
    const rest = ((await (await t.http(`/v1/sessions/${sid}/threads`)).json()) as any).data;
    expect(rest).toHaveLength(3);
    const d = await ok(
      `query($s: ID!) { session(id: $s) { id threads { nodes { ${THREAD} } hasMore nextPage } }
        sessionThreads(sessionId: $s) { nodes { ${THREAD} } } }`,
      { s: sid },
    );
    const nodes = d.session.threads.nodes;
    expect(d.session.threads.hasMore).toBe(false);
    expect(d.sessionThreads.nodes.map(still)).toEqual(nodes.map(still));
    expect(nodes.map((n: any) => n.id)).toEqual(rest.map((r: any) => r.id));
    const [p, ...children] = nodes;
    expect(p).toMatchObject({
      type: 'session_thread',
      sessionId: sid,
      parentThreadId: null,
      agent: { id: coord.id, name: 'gql-coordinator', model: { id: COORD } },
    });
    expect(children.map((c: any) => c.agent.name).sort()).toEqual(['gql-writer-a', 'gql-writer-b']);
    for (const [i, c] of children.entries()) {
      const r = rest[i + 1];
      expect(c).toMatchObject({
        sessionId: sid,
        parentThreadId: p.id,
        status: r.status.toUpperCase(),
        archivedAt: null,
        createdAt: r.created_at,
        usage: { outputTokens: r.usage.output_tokens, inputTokens: r.usage.input_tokens },
        stats: { startupSeconds: 0 },
      });
      expect(c.id).toMatch(/^sthr_/);
    }
    const one = await ok(
      `query($s: ID!, $th: ID!) { sessionThread(sessionId: $s, threadId: $th) { ${THREAD} } }`,
      { s: sid, th: children[0].id },
    );
    expect(still(one.sessionThread)).toEqual(still(children[0]));
    // The status filter and the page size are REST's (validated, naming the argument).
    const running = await ok(
      `query($s: ID!) { sessionThreads(sessionId: $s, statuses: [RUNNING]) { nodes { id } } }`,
      { s: sid },
    );
    expect(running.sessionThreads.nodes).toEqual([]);
    const paged = await ok(
      `query($s: ID!) { sessionThreads(sessionId: $s, limit: 1) { nodes { id } hasMore nextPage } }`,
      { s: sid },
    );
    expect(paged.sessionThreads).toMatchObject({ nodes: [{ id: p.id }], hasMore: true });
    const next = await ok(
      `query($s: ID!, $pg: String) { sessionThreads(sessionId: $s, limit: 5, page: $pg) { nodes { id } } }`,
      { s: sid, pg: paged.sessionThreads.nextPage },
    );
    expect(next.sessionThreads.nodes.map((n: any) => n.id)).toEqual(children.map((c: any) => c.id));
    const bad = await gql(
      `query($s: ID!) { sessionThreads(sessionId: $s, limit: 0) { hasMore } }`,
      {
        s: sid,
      },
    );
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'limit' });
  });

  it('threadEvents reads a child thread its own log; the primary thread the session', async () => {
    const threads = (
      await ok(`query($s: ID!) { sessionThreads(sessionId: $s) { nodes { id agent { name } } } }`, {
        s: sid,
      })
    ).sessionThreads.nodes;
    const a = threads.find((x: any) => x.agent.name === 'gql-writer-a');
    const q = `query($s: ID!, $th: ID!) { threadEvents(sessionId: $s, threadId: $th, limit: 1000) {
      nodes { ${EVENT} } hasMore } }`;
    const own = (await ok(q, { s: sid, th: a.id })).threadEvents.nodes;
    expect(own[0]).toMatchObject({
      type: 'agent.thread_message_received',
      data: { content: [{ text: 'task a' }] },
    });
    expect(own.map((e: any) => e.type)).toContain('agent.message');
    expect(own.find((e: any) => e.type === 'agent.message').data.content[0].text).toBe('A says hi');
    expect(own.at(-1).type).toBe('session.status_idle');
    const rest = await restEvents(`${sid}/threads/${a.id}`);
    expect(own.map((e: any) => e.id)).toEqual(rest.map((e) => e.id));
    const prim = (await ok(q, { s: sid, th: threads[0].id })).threadEvents.nodes;
    expect(prim.map((e: any) => e.id)).toEqual((await restEvents(sid)).map((e) => e.id));
    // The list arguments are sessionEvents' (types filter, order).
    const typed = await ok(
      `query($s: ID!, $th: ID!) { threadEvents(sessionId: $s, threadId: $th, types: ["agent.message"], order: DESC) { nodes { type } } }`,
      { s: sid, th: a.id },
    );
    expect(typed.threadEvents.nodes).toEqual([{ type: 'agent.message' }]);
  });

  it('the subscription with threadId replays and follows one thread, not the primary', async () => {
    const threads = (
      await ok(`query($s: ID!) { sessionThreads(sessionId: $s) { nodes { id agent { name } } } }`, {
        s: sid,
      })
    ).sessionThreads.nodes;
    const a = threads.find((x: any) => x.agent.name === 'gql-writer-a');
    const own = await restEvents(`${sid}/threads/${a.id}`);
    // Replay from seq 0: exactly the thread's log.
    const replay = follow({ s: sid, th: a.id, after: 0 }, (e) => e.type === 'session.status_idle');
    const r = await replay.events;
    expect(r.errors).toBeUndefined();
    expect(r.seen.map((e) => e.id)).toEqual(own.map((e) => e.id));
    // Live: the coordinator sends A a second message; the subscription sees A's new turn only.
    const live = follow({ s: sid, th: a.id }, (e) => e.type === 'session.status_idle');
    await live.connected;
    aId = a.id;
    t.model.script(COORD, ...leadTurns());
    t.model.script(WA, say('A replies twice'));
    const before = await idles(sid);
    await t.client.beta.sessions.events.send(sid, { events: [userMessage('ask A again')] });
    const l = await live.events;
    expect(l.errors).toBeUndefined();
    expect(l.seen[0]).toMatchObject({
      type: 'agent.thread_message_received',
      data: { content: [{ text: 'once more, A' }] },
    });
    expect(l.seen.map((e) => e.seq)).toEqual(l.seen.map((_, i) => own.at(-1).seq + 1 + i));
    expect(l.seen.find((e) => e.type === 'agent.message').data.content[0].text).toBe(
      'A replies twice',
    );
    expect(l.seen.some((e) => e.type === 'user.message')).toBe(false);
    await waitFor(async () => (await idles(sid)) > before, 60_000);
  }, 90_000);

  it('another tenant, or another session, gets NOT_FOUND; thread page sizes count in the cost', async () => {
    const threads = (
      await ok(`query($s: ID!) { sessionThreads(sessionId: $s) { nodes { id } } }`, { s: sid })
    ).sessionThreads.nodes;
    const child = threads[1].id;
    const stranger = await t.newTenant('gql-threads-stranger');
    const notFound = (r: { body: any }) =>
      expect(r.body.errors?.[0]?.extensions, JSON.stringify(r.body)).toMatchObject({
        code: 'NOT_FOUND',
      });
    notFound(
      await gql(
        `query($s: ID!) { sessionThreads(sessionId: $s) { nodes { id } } }`,
        { s: sid },
        stranger.apiKey,
      ),
    );
    notFound(
      await gql(
        `query($s: ID!, $th: ID!) { threadEvents(sessionId: $s, threadId: $th) { nodes { id } } }`,
        { s: sid, th: child },
        stranger.apiKey,
      ),
    );
    const mine = await gql(`query($s: ID!) { session(id: $s) { threads { nodes { id } } } }`, {
      s: sid,
    });
    expect(mine.body.data.session.threads.nodes).toHaveLength(3);
    const theirs = await gql(
      `query($s: ID!) { session(id: $s) { threads { nodes { id } } } }`,
      { s: sid },
      stranger.apiKey,
    );
    expect(theirs.body.data?.session ?? null).toBeNull();
    const sub = follow({ s: sid, th: child, after: 0 }, () => true, stranger.apiKey);
    const r = await sub.events;
    expect(r.seen).toEqual([]);
    expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
    // Another session of the same tenant does not hold this thread.
    const other = (await t.client.beta.sessions.create({ agent: coord.id, environment_id: envId }))
      .id;
    notFound(
      await gql(`query($s: ID!, $th: ID!) { sessionThread(sessionId: $s, threadId: $th) { id } }`, {
        s: other,
        th: child,
      }),
    );
    notFound(
      await gql(
        `query($s: ID!, $th: ID!) { threadEvents(sessionId: $s, threadId: $th) { nodes { id } } }`,
        { s: other, th: child },
      ),
    );
    const sub2 = follow({ s: other, th: child, after: 0 }, () => true);
    expect((await sub2.events).errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
    // The document limits hold for threads: nested page sizes multiply past GRAPHQL_MAX_COST.
    const costly = await gql(
      `{ sessions(limit: 1000) { nodes { threads(limit: 1000) { nodes { id agent { name } } } } } }`,
    );
    expect(costly.status).toBe(400);
    expect(costly.body.errors[0].extensions).toMatchObject({ limit: 'cost' });
  });
});
