/**
 * What a GitHub publication may let the agent do beyond `reply`, and the repository its
 * sessions get for it:
 * - `pull_request`: the session gets the event's repository as a `github_repository` resource
 *   (mounted at /workspace/<repo>, cloned and pushed through the egress proxy with the
 *   installation token, core/src/repositories), and the tool `open_pull_request` opens a pull
 *   request from a branch the agent pushed (POST /repos/{owner}/{repo}/pulls; the base defaults
 *   to the repository's default branch).
 * Inputs are checked before any request; GitHub's refusal (no such branch, no commits between
 * head and base, a pull request that already exists) comes back as the tool's error text with
 * GitHub's own message. Proved by test/e2e/integrations/github-repository.test.ts ("an issue
 * served with pull_request…") and core/test/integrations.actions.test.ts ("open_pull_request…").
 */
import { IntegrationError, type InstallCredentials, type ProviderAction } from '../port.js';

type Json = Record<string, unknown>;

/** The one GitHub call an action makes: `path` under the API with the installation token. */
export type GithubRest = (
  install: InstallCredentials,
  method: string,
  path: string,
  body: Json | undefined,
  status: number,
  what: string,
) => Promise<Json>;

/** An owner or repository name as GitHub allows it (never `.` or `..`: no path steps). */
const NAME = /^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/;
/** A branch name git accepts (git check-ref-format, simplified to a safe subset). */
const BRANCH = /^(?!\/|.*(?:\.\.|\/\/|@\{|\.lock$|\/$|\.$))[A-Za-z0-9._\/-]{1,200}$/;

/** A thread target's owner, repo and issue number, checked (`what` names it in the refusal). */
export function githubThread(target: Record<string, string>, what: string) {
  const { owner, repo, number } = target;
  if (!NAME.test(owner ?? '') || !NAME.test(repo ?? '') || !/^\d{1,12}$/.test(number ?? ''))
    throw new IntegrationError(`${what} is not a GitHub owner/repo#number`);
  return { owner: owner!, repo: repo!, number: number! };
}

function text(input: Json, field: string, max: number, required: boolean): string | undefined {
  const v = input[field];
  if (v === undefined || v === null) {
    if (required) throw new IntegrationError(`${field} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || !v.trim() || v.length > max)
    throw new IntegrationError(`${field} must be a non-empty string of at most ${max} characters`);
  return v;
}

function branch(input: Json, field: string, required: boolean): string | undefined {
  const v = text(input, field, 200, required);
  if (v !== undefined && !BRANCH.test(v))
    throw new IntegrationError(`${field} is not a branch name`);
  return v;
}

export function githubActions(rest: GithubRest): ProviderAction[] {
  const openPullRequest: ProviderAction = {
    capability: 'pull_request',
    tool: 'open_pull_request',
    description:
      'Open a pull request on this GitHub repository from a branch you pushed (the repository ' +
      'is checked out under /workspace; push with `git push origin <branch>`). Returns the ' +
      "pull request's number and URL.",
    input_schema: {
      type: 'object',
      properties: {
        head: { type: 'string', description: 'The branch you pushed, e.g. agent/fix-login' },
        title: { type: 'string', description: 'Title of the pull request' },
        body: { type: 'string', description: 'Description (Markdown)' },
        base: { type: 'string', description: "Branch to merge into (default: the repository's)" },
        draft: { type: 'boolean', description: 'Open it as a draft' },
      },
      required: ['head', 'title'],
      additionalProperties: false,
    },
    async run(install, target, input) {
      const { owner, repo, number } = githubThread(target, 'this thread');
      const extra = Object.keys(input).find(
        (k) => !['head', 'title', 'body', 'base', 'draft'].includes(k),
      );
      if (extra) throw new IntegrationError(`${extra} is not an input of open_pull_request`);
      const head = branch(input, 'head', true)!;
      const title = text(input, 'title', 256, true)!;
      const body = text(input, 'body', 60_000, false) ?? `For #${number}.`;
      if (input.draft !== undefined && typeof input.draft !== 'boolean')
        throw new IntegrationError('draft must be true or false');
      let base = branch(input, 'base', false);
      if (!base) {
        const r = await rest(
          install,
          'GET',
          `/repos/${owner}/${repo}`,
          undefined,
          200,
          'reading the repository',
        );
        base = typeof r.default_branch === 'string' ? r.default_branch : 'main';
      }
      const pr = await rest(
        install,
        'POST',
        `/repos/${owner}/${repo}/pulls`,
        { title, head, base, body, draft: input.draft === true },
        201,
        `opening a pull request from ${head} into ${base}`,
      );
      return `Opened pull request #${String(pr.number)} (${head} → ${base}): ${String(pr.html_url)}`;
    },
  };
  return [openPullRequest];
}

/** The session resources a GitHub thread gets with `capabilities` (see the file comment). */
export function githubSessionResources(
  webUrl: string,
  target: Record<string, string>,
  capabilities: readonly string[],
): object[] {
  if (!capabilities.includes('pull_request')) return [];
  const { owner, repo } = target;
  if (!NAME.test(owner ?? '') || !NAME.test(repo ?? '')) return [];
  return [
    {
      type: 'github_repository',
      url: `${webUrl}/${owner}/${repo}.git`,
      mount_path: `/workspace/${repo}`,
    },
  ];
}
