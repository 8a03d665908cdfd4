/**
 * The capability registry of `cap_cli` credentials (spec "Vault and credentials", rule 2:
 * "`cap_cli` binds by cli_id lookup in the capability spec registry"): each known CLI's id,
 * the API hosts it talks to and the header form it authenticates with. The session's egress
 * proxy sets that header on requests to those hosts (core/src/egress/injection/vaultInjection.ts), so
 * the CLI inside the sandbox works without ever holding the token.
 *
 * Kept small and checked against each CLI's own client code:
 * - `gh` (GitHub CLI): api.github.com and uploads.github.com (release assets), header
 *   `Authorization: token <t>` (cli/go-gh pkg/api/http_client.go sets `token %s`); GH_TOKEN.
 * - `glab` (GitLab CLI): gitlab.com, header `PRIVATE-TOKEN: <t>` (the GitLab REST API's
 *   personal access token header, what glab's go-gitlab client sends for a PAT); GITLAB_TOKEN.
 * - `npm`: registry.npmjs.org, header `Authorization: Bearer <t>` (npm's `_authToken`); npm
 *   reads no token variable by itself, so none is set.
 * - `hf` (Hugging Face CLI, huggingface_hub): huggingface.co, header
 *   `Authorization: Bearer <t>`; HF_TOKEN.
 * `env`: the variable the CLI reads its token from; every exec in the sandbox gets it set to a
 * placeholder (`afv_ph_…`, not the token), so the CLI believes it is logged in and sends a
 * request, whose header the proxy then replaces (core/src/egress/injection/commandSecrets.ts).
 * Hosts use the proxy's patterns (exact name, or `*.suffix`). A credential never opens a host:
 * the session's network policy and the platform's egress policy still decide what is reached.
 *
 * An unknown cli_id is refused at credential create and update (400 `auth.cli_id`, listing
 * these ids: core/src/vaults/credentials.ts). Proved by test/e2e/credentials/sandbox-credentials.test.ts
 * ("cap_cli credentials").
 */

export interface CliSpec {
  /** Hosts the CLI's token is sent to (proxy host patterns). */
  hosts: readonly string[];
  /** Header name, lower case. */
  header: string;
  /** Value prefix before the token (e.g. `Bearer `), possibly empty. */
  prefix: string;
  /** The env variable the CLI reads its token from (set to a placeholder in the sandbox). */
  env?: string;
}

export type CliRegistry = Readonly<Record<string, CliSpec>>;

export const CLI_REGISTRY: CliRegistry = {
  gh: {
    hosts: ['api.github.com', 'uploads.github.com'],
    header: 'authorization',
    prefix: 'token ',
    env: 'GH_TOKEN',
  },
  glab: { hosts: ['gitlab.com'], header: 'private-token', prefix: '', env: 'GITLAB_TOKEN' },
  npm: { hosts: ['registry.npmjs.org'], header: 'authorization', prefix: 'Bearer ' },
  hf: { hosts: ['huggingface.co'], header: 'authorization', prefix: 'Bearer ', env: 'HF_TOKEN' },
};

export const knownCliIds = (registry: CliRegistry = CLI_REGISTRY) => Object.keys(registry).sort();
