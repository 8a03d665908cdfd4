/**
 * Validation of input events that answer the agent's tool calls, before anything is appended.
 * Guarantees: a `user.tool_confirmation` is accepted only when it names an agent.tool_use (or
 * agent.mcp_tool_use) of this session, of this tenant, that a permission policy held for
 * confirmation (`evaluated_permission: 'ask'`) and that has neither a result nor an earlier
 * confirmation; anything else is a 400 naming `events[i].tool_use_id`, the same answer for an id
 * of another session or tenant as for one that does not exist (nothing leaks). `deny_message` is
 * refused with `result: 'allow'` (SDK: "only allowed when result is 'deny'"). A
 * `user.custom_tool_result` must name an agent.custom_tool_use of this session.
 * Proven by test/e2e/sandbox/permission-policy.test.ts and test/e2e/sdk/sdk-flow.test.ts (custom tools).
 */
import type { InputEvent } from '@agentfleet/schemas';
import { invalid } from '../errors.js';
import type { Collections } from '../store/collections.js';

/** Throws a 400 naming the field for the first input event that answers no open tool call. */
export async function checkToolAnswers(
  events: Collections['events'],
  tenant: string,
  sessionId: string,
  input: readonly InputEvent[],
): Promise<void> {
  const confirmedHere = new Set<string>();
  for (const [i, e] of input.entries()) {
    if (e.type === 'user.custom_tool_result') {
      const use = await events.findOne(tenant, {
        session_id: sessionId,
        _id: e.custom_tool_use_id,
        type: 'agent.custom_tool_use',
      });
      if (!use)
        throw invalid(
          `events[${i}].custom_tool_use_id`,
          `no agent.custom_tool_use ${e.custom_tool_use_id} in this session`,
        );
    }
    if (e.type !== 'user.tool_confirmation') continue;
    const field = `events[${i}].tool_use_id`;
    if (e.result === 'allow' && e.deny_message != null)
      throw invalid(`events[${i}].deny_message`, "only allowed when result is 'deny'");
    if (confirmedHere.has(e.tool_use_id))
      throw invalid(field, `${e.tool_use_id} is confirmed twice in this request`);
    confirmedHere.add(e.tool_use_id);
    const use = await events.findOne(tenant, {
      session_id: sessionId,
      _id: e.tool_use_id,
      type: { $in: ['agent.tool_use', 'agent.mcp_tool_use'] },
    });
    if (!use || use.payload.evaluated_permission !== 'ask')
      throw invalid(field, `no tool use ${e.tool_use_id} awaiting confirmation in this session`);
    const answered =
      (await events.findOne(tenant, {
        session_id: sessionId,
        type: { $in: ['agent.tool_result', 'user.tool_confirmation'] },
        'payload.tool_use_id': e.tool_use_id,
      })) ??
      (await events.findOne(tenant, {
        session_id: sessionId,
        type: 'agent.mcp_tool_result',
        'payload.mcp_tool_use_id': e.tool_use_id,
      }));
    if (answered)
      throw invalid(
        field,
        `tool use ${e.tool_use_id} is no longer awaiting confirmation (${answered.type === 'user.tool_confirmation' ? 'already confirmed' : 'it has a result'})`,
      );
  }
}
