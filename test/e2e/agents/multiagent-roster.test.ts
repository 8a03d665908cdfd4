/**
 * The agent's `multiagent` setting (core/src/agents/multiagent.ts), through the official
 * TypeScript SDK: every roster rule the SDK states is a 400 naming the field; the advisor entry
 * and each multiagent_20261001 part are refused by name as not supported; a coordinator's custom
 * tool cannot take a thread tool's name; nothing is stored on any refusal (agent list unchanged
 * on create, version unchanged on update). A valid coordinator roster is stored resolved: every
 * entry `{type: 'agent', id, version}` (a string at the current version, `self` at the version
 * written, kept at each later version), and a coordinator cannot be a roster member (depth 1).
 * Threads themselves: test/e2e/threads/threads.test.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let c: Anthropic;
let a1: string;
let a2: string;
let archived: string;
let foreign: string;
beforeAll(async () => {
  t = await startPlatform();
  c = t.client;
  a1 = (await c.beta.agents.create({ name: 'r1', model: 'claude-sonnet-4-5' })).id;
  const two = await c.beta.agents.create({ name: 'r2', model: 'claude-sonnet-4-5' });
  a2 = two.id;
  await c.beta.agents.update(a2, { version: two.version, system: 'v2' });
  archived = (await c.beta.agents.create({ name: 'gone', model: 'claude-sonnet-4-5' })).id;
  await c.beta.agents.archive(archived);
  const other = await t.newTenant('other');
  foreign = (await other.client.beta.agents.create({ name: 'theirs', model: 'claude-sonnet-4-5' }))
    .id;
});
afterAll(async () => {
  await t?.close();
});

/** The 400's message: it starts with the field, and the error is the spec's shape. */
async function refusal(multiagent: unknown, update?: { id: string; version: number }) {
  const p = update
    ? c.beta.agents.update(update.id, { version: update.version, multiagent } as any)
    : c.beta.agents.create({ name: 'm', model: 'claude-sonnet-4-5', multiagent } as any);
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, JSON.stringify(multiagent)).toBeInstanceOf(Anthropic.BadRequestError);
  const body = (err as InstanceType<typeof Anthropic.BadRequestError>).error as any;
  expect(body.error.type).toBe('invalid_request');
  return body.error.message as string;
}
const coordinator = (...agents: unknown[]) => ({ type: 'coordinator', agents });

describe('multiagent roster validation', () => {
  it('coordinator roster rules: each a 400 naming the field, nothing stored', async () => {
    const before = (await c.beta.agents.list({ limit: 100 })).data.length;
    const cases: [unknown, string][] = [
      [{ type: 'swarm' }, 'multiagent.type:'],
      [{ type: 'coordinator' }, 'multiagent.agents:'],
      [coordinator(), 'multiagent.agents:'],
      [coordinator(...Array.from({ length: 21 }, () => a1)), 'multiagent.agents:'],
      [{ ...coordinator(a1), extra: 1 }, 'multiagent.extra:'],
      [coordinator(42), 'multiagent.agents[0]:'],
      [coordinator(''), 'multiagent.agents[0]:'],
      [coordinator({ type: 'team' }), 'multiagent.agents[0].type:'],
      [coordinator({ type: 'agent' }), 'multiagent.agents[0].id:'],
      [coordinator({ type: 'agent', id: a1, version: 0 }), 'multiagent.agents[0].version:'],
      [coordinator({ type: 'agent', id: a1, version: 1.5 }), 'multiagent.agents[0].version:'],
      [coordinator({ type: 'agent', id: a2, version: 3 }), 'multiagent.agents[0].version:'],
      [coordinator({ type: 'agent', id: a1, name: 'x' }), 'multiagent.agents[0].name:'],
      [coordinator('agent_missing'), 'multiagent.agents[0]:'],
      [coordinator(foreign), 'multiagent.agents[0]:'],
      [coordinator({ type: 'agent', id: foreign }), 'multiagent.agents[0].id:'],
      [coordinator(archived), 'multiagent.agents[0]:'],
      [coordinator(a1, { type: 'agent', id: a1, version: 1 }), 'multiagent.agents[1].id:'],
      [coordinator({ type: 'self' }, { type: 'self' }), 'multiagent.agents[1]:'],
      [coordinator({ type: 'advisor' }), 'multiagent.agents[0].model:'],
      [
        coordinator({ type: 'advisor', model: 'm' }, { type: 'advisor', model: 'n' }),
        'multiagent.agents[1]:',
      ],
    ];
    for (const [value, field] of cases) {
      const message = await refusal(value);
      expect(message.startsWith(field), `${JSON.stringify(value)} → ${message}`).toBe(true);
      expect(message).not.toContain('not supported');
    }
    // Another tenant's agent reads exactly as a missing one.
    expect(await refusal(coordinator(foreign))).toBe(
      `multiagent.agents[0]: agent ${foreign} not found`,
    );
    expect((await c.beta.agents.list({ limit: 100 })).data.length).toBe(before);
  });

  it('a valid roster is stored resolved; the advisor entry is refused by its own index', async () => {
    const valid = coordinator(a1, { type: 'agent', id: a2, version: 1 }, { type: 'self' });
    const made = await c.beta.agents.create({
      name: 'lead',
      model: 'claude-sonnet-4-5',
      multiagent: valid,
    } as any);
    expect(made.multiagent).toEqual({
      type: 'coordinator',
      agents: [
        { type: 'agent', id: a1, version: 1 },
        { type: 'agent', id: a2, version: 1 },
        { type: 'agent', id: made.id, version: 1 },
      ],
    });
    // self follows the agent's own version; the others stay where they were resolved.
    const next = await c.beta.agents.update(made.id, { version: 1, system: 'lead v2' });
    expect((next.multiagent as any).agents.map((e: any) => e.version)).toEqual([1, 1, 2]);
    expect((await c.beta.agents.versions.list(made.id)).data.length).toBe(2);
    // A coordinator is no roster member (depth 1).
    expect(await refusal(coordinator(made.id))).toBe(
      `multiagent.agents[0]: agent ${made.id} has multiagent set itself (a roster is one level deep)`,
    );
    const before = (await c.beta.agents.list({ limit: 100 })).data.length;
    expect(await refusal(coordinator(a1, { type: 'advisor', model: 'claude-opus-4-5' }))).toMatch(
      /^multiagent\.agents\[1\]: the advisor roster entry is not supported yet/,
    );
    expect((await c.beta.agents.list({ limit: 100 })).data.length).toBe(before);
  });

  it("a coordinator's custom tool cannot take a thread tool's name", async () => {
    const clash = await c.beta.agents
      .create({
        name: 'clash',
        model: 'claude-sonnet-4-5',
        tools: [
          {
            type: 'custom',
            name: 'start_thread',
            description: 's',
            input_schema: { type: 'object' },
          },
        ],
        multiagent: coordinator(a1),
      } as any)
      .then(
        () => null,
        (e) => e,
      );
    expect((clash as any).error.error.message).toMatch(
      /^tools\[0\]\.name: start_thread is the name of a coordinator's thread tool/,
    );
  });

  it('on update, self is the agent itself: naming it twice is a duplicate; nothing changes', async () => {
    const me = await c.beta.agents.create({ name: 'me', model: 'claude-sonnet-4-5' });
    const at = { id: me.id, version: me.version };
    expect(await refusal(coordinator({ type: 'self' }, me.id), at)).toMatch(
      /^multiagent\.agents\[1\]: agent .* is already in the roster/,
    );
    expect(await refusal(coordinator({ type: 'self' }, archived), at)).toMatch(
      /^multiagent\.agents\[1\]: /,
    );
    const after = await c.beta.agents.retrieve(me.id);
    expect(after.version).toBe(me.version);
    expect(after.multiagent).toBeNull();
  });

  it('multiagent_20261001: each enabled part refused by name; all disabled names the type', async () => {
    const f = (x: object = {}) => ({ type: 'multiagent_20261001', ...x });
    const off = { type: 'disabled' };
    const cases: [unknown, RegExp][] = [
      [f(), /^multiagent\.subagents: .*not supported yet/],
      [f({ subagents: off }), /^multiagent\.workflows: .*not supported yet/],
      [
        f({
          subagents: off,
          workflows: off,
          advisor: { type: 'enabled', model: 'claude-opus-4-5' },
        }),
        /^multiagent\.advisor: .*not supported yet/,
      ],
      [
        f({ subagents: off, workflows: off, advisor: off }),
        /^multiagent\.type: .*multiagent: null/,
      ],
      [f({ advisor: { type: 'enabled' } }), /^multiagent\.advisor\.model: /],
      [f({ subagents: { type: 'on' } }), /^multiagent\.subagents\.type: /],
      [
        f({ workflows: { type: 'disabled', predefined_agents: [] } }),
        /^multiagent\.workflows\.predefined_agents: /,
      ],
      [f({ plan: 1 }), /^multiagent\.plan: /],
    ];
    for (const [value, expected] of cases)
      expect(await refusal(value), JSON.stringify(value)).toMatch(expected);
  });

  it('null is single-threaded and accepted, on create and update', async () => {
    const a = await c.beta.agents.create({
      name: 'n',
      model: 'claude-sonnet-4-5',
      multiagent: null,
    });
    expect(a.multiagent).toBeNull();
    const u = await c.beta.agents.update(a.id, {
      version: a.version,
      multiagent: null,
      system: 's',
    });
    expect(u.multiagent).toBeNull();
  });
});
