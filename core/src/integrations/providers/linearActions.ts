/**
 * What a Linear publication may let the agent do beyond `reply`:
 * - `state_change`: the tool `set_issue_state` moves the thread's issue to one of its team's
 *   workflow states, named as people see them ("In Progress", "Done"; any case). An unknown
 *   name changes nothing and the tool's error lists the team's states, so the agent can pick
 *   one. Queries: `issue(id) { state team { states } }`, then `issueUpdate(id, {stateId})`.
 * Proved by test/e2e/integrations/linear.test.ts ("state_change…") and
 * core/test/integrations.actions.test.ts ("set_issue_state…").
 */
import { IntegrationError, type InstallCredentials, type ProviderAction } from '../port.js';

type Obj = Record<string, unknown>;
/** One GraphQL call with the install's token (Linear's errors are an IntegrationError). */
export type LinearGraphql = (
  install: InstallCredentials,
  query: string,
  variables: Obj,
) => Promise<Obj>;

const STATES_QUERY =
  'query($id: String!) { issue(id: $id) { id identifier state { id name } team { states { nodes { id name type } } } } }';
const UPDATE_MUTATION =
  'mutation($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success issue { id state { name } } } }';

const obj = (v: unknown): Obj =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};

export function linearActions(graphql: LinearGraphql): ProviderAction[] {
  const setIssueState: ProviderAction = {
    capability: 'state_change',
    tool: 'set_issue_state',
    description:
      "Move this Linear issue to another workflow state of its team, by the state's name " +
      '(e.g. "In Progress", "In Review", "Done").',
    input_schema: {
      type: 'object',
      properties: { state: { type: 'string', description: 'The workflow state name' } },
      required: ['state'],
      additionalProperties: false,
    },
    async run(install, target, input) {
      const issueId = target.issue_id;
      if (typeof issueId !== 'string' || !issueId)
        throw new IntegrationError('this thread has no Linear issue');
      const extra = Object.keys(input).find((k) => k !== 'state');
      if (extra) throw new IntegrationError(`${extra} is not an input of set_issue_state`);
      const want = input.state;
      if (typeof want !== 'string' || !want.trim() || want.length > 100)
        throw new IntegrationError('state must be a workflow state name (1–100 characters)');
      const issue = obj((await graphql(install, STATES_QUERY, { id: issueId })).issue);
      const nodes = obj(obj(issue.team).states).nodes;
      const states = (Array.isArray(nodes) ? nodes : [])
        .map(obj)
        .filter((n) => typeof n.id === 'string' && typeof n.name === 'string');
      const state = states.find(
        (n) => (n.name as string).toLowerCase() === want.trim().toLowerCase(),
      );
      if (!state)
        throw new IntegrationError(
          `the team has no workflow state named ${JSON.stringify(want.slice(0, 100))}; its states: ${states.map((n) => n.name).join(', ')}`,
        );
      const label = String(issue.identifier ?? issueId);
      if (obj(issue.state).id === state.id) return `${label} is already in ${String(state.name)}`;
      const out = obj(
        (await graphql(install, UPDATE_MUTATION, { id: issueId, input: { stateId: state.id } }))
          .issueUpdate,
      );
      if (out.success !== true) throw new IntegrationError('Linear did not update the issue');
      return `Moved ${label} to ${String(obj(obj(out.issue).state).name ?? state.name)}`;
    },
  };
  return [setIssueState];
}
