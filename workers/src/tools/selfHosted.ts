/**
 * The `ama_worker` lane (spec "Work item lifecycle", harness lanes): for a session whose
 * environment is `self_hosted`, the control plane runs the model loop and the customer's
 * worker (any official or community environment worker, unchanged) executes the agent toolset.
 * Guarantees:
 * - a call of an agent toolset tool the worker runs (core WORKER_TOOLSET_TOOLS: bash, read,
 *   write, edit, glob, grep) is recorded as agent.tool_use with its permission evaluation, as
 *   everywhere, and never executed here: the turn ends idle with `requires_action` naming it
 *   (beside held and client-executed calls) and resumes when the worker's user.tool_result
 *   (SDK shape) answers every call, like user.custom_tool_result (../turn/input.ts);
 * - a call a policy held (`ask`) runs in the worker once the client allows it (the SDK's
 *   SessionToolRunner holds it until then): the platform waits for its user.tool_result; a
 *   denied call is answered here with the deny message and the worker posts nothing;
 * - web_fetch and web_search stay in the control plane (no sandbox, the egress policy applies);
 * - the platform starts no sandbox for the session (the worker is the sandbox): a custom tool
 *   with `execution` (sandbox or http) is refused at session create and, should one still be
 *   called, answered with an is_error result without touching a sandbox; stdio MCP servers are
 *   refused at create and get no sandbox here (core/src/api/unsupported.ts refuseOnSelfHosted);
 * - a call the client abandoned (a user.message after the idle instead of the result) gets an
 *   is_error agent.tool_result, so a late worker result is refused (400, already answered)
 *   instead of answering the call twice;
 * - recovery never replays a worker call: a crashed turn's open worker calls stay open for the
 *   worker (no orphan error result, ../turn/recovery.ts), the control plane never executes them,
 *   and the official worker's runner skips calls already answered in the log.
 * Proven by test/e2e/work/self-hosted-lane.test.ts (HTTP), test/e2e/work/self-hosted-lane-crash.test.ts (kill -9
 * recovery), test/e2e/work/environment-worker.test.ts (the official
 * TypeScript EnvironmentWorker) and test/e2e/sdk/sdk_suite/test_environment_worker.py.
 */
import { awaitsWorker, isSelfHostedSession, WORKER_TOOLSET_TOOLS } from '@agentfleet/core';
import type { EventDoc, SessionDoc } from '@agentfleet/core';
import type { ToolKind } from './executor.js';

export const ABANDONED_WORKER_CALL_TEXT =
  'this tool call was not answered by the self-hosted worker before the next user message';

/** The lane of a self_hosted session; `null` for a cloud session (the platform runs tools). */
export class SelfHostedLane {
  private constructor(private readonly s: Pick<SessionDoc, 'environment'>) {}

  static of(s: Pick<SessionDoc, 'environment'>): SelfHostedLane | null {
    return isSelfHostedSession(s) ? new SelfHostedLane(s) : null;
  }

  /** True for a call the worker executes (and answers with user.tool_result). */
  runsOnWorker(kind: ToolKind): boolean {
    return kind.kind === 'builtin' && WORKER_TOOLSET_TOOLS.has(kind.name);
  }

  /** True for a logged agent.tool_use that waits for the worker's result. */
  awaits(use: Pick<EventDoc, 'type' | 'payload'>): boolean {
    return awaitsWorker(this.s, use);
  }

  /** Why a call cannot run in this lane (it needs the platform's sandbox), or null. */
  refusal(kind: ToolKind): string | null {
    if (kind.kind === 'custom_sandbox' || kind.kind === 'custom_http')
      return `custom tool '${kind.name}' needs the platform's sandbox, and a self_hosted environment has none`;
    return null;
  }
}
