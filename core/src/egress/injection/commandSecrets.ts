/**
 * The process environment the session's vault credentials give each exec in its sandbox
 * (wrapping the api SandboxManager.run hands out, so bash, custom sandbox tools and custom
 * http tools all get it; processes started with startProcess, e.g. stdio MCP servers, get the
 * placeholders but never a command_secret), read live per exec: a credential added, rotated
 * or archived after warmup applies to the next command.
 * - `environment_variable`: `$<secret_name>` is the credential's placeholder, never the secret
 *   (./placeholders.ts; the egress proxy substitutes it).
 * - `cap_cli`: the CLI's token variable (registry `env`, e.g. GH_TOKEN) is a placeholder too, so
 *   the CLI sends its request; the proxy sets the real header (./vaultInjection.ts).
 * - `command_secret` (spec "Vault and credentials" rule 5): `secret_name=secret_value` is added
 *   ONLY when the command is one simple command whose program's basename is in `commands`
 *   (`simpleCommandProgram`: no `;`, `&`, `|`, redirection, backquote, `$`, parentheses,
 *   braces, newline, comment, backslash, leading `VAR=` assignment; when in doubt, nothing is
 *   injected). THIS PATH IS WEAKER: the secret is inside the sandbox, in that process's
 *   environment (and whatever that program runs: git hooks, aliases, a program earlier on PATH
 *   with the same name), readable by it. It is not out-of-sandbox like the egress proxy's
 *   injection, and should be used only where no proxy-side credential fits.
 * Credential variables are set last: they replace a caller's variable of the same name.
 * Proved by test/e2e/credentials/sandbox-credentials.test.ts ("command_secret", "environment_variable").
 */
import type { ResolvedCredential } from '../../vaults/vaults.js';
import type { SandboxAgentApi, SandboxManager, SessionRef } from '../../sandbox/port.js';
import { CLI_REGISTRY, type CliRegistry } from '../cliRegistry.js';
import { placeholderEnv, placeholderOf } from './placeholders.js';

/** Characters that make a command anything but one plain simple command (even quoted). */
const UNSAFE = /[;&|<>`$(){}\n\r\\#!]/;
/** Shell words that run or change what runs next: never treated as the program. */
const NOT_A_PROGRAM = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'case',
  'esac',
  'for',
  'while',
  'until',
  'do',
  'done',
  'function',
  'select',
  'time',
  'coproc',
  'exec',
  'eval',
  'command',
  'builtin',
  '.',
  'source',
]);

/**
 * The program (basename) of a single simple command (`git status -s`, `/usr/bin/git push
 * 'a b'`), or null when the command is anything more or anything unclear: an unsafe character
 * anywhere (inside quotes too), unbalanced or mixed quotes, a first word that is quoted, holds
 * an `=` (an assignment prefix) or is a shell keyword.
 */
export function simpleCommandProgram(command: string): string | null {
  const c = command.trim();
  if (!c || c.length > 8192 || UNSAFE.test(c)) return null;
  const singles = c.split("'").length - 1;
  const doubles = c.split('"').length - 1;
  if (singles % 2 || doubles % 2 || (singles && doubles)) return null;
  const program = /^\S+/.exec(c)![0];
  if (!/^[A-Za-z0-9._/+-]+$/.test(program) || NOT_A_PROGRAM.has(program)) return null;
  const base = program.slice(program.lastIndexOf('/') + 1);
  return base && base !== '.' && base !== '..' ? base : null;
}

/**
 * The env one exec gets from the session's credentials (placeholders; command secrets). A
 * null command (a process started without a shell, e.g. a stdio MCP server) gets the
 * placeholders only.
 */
export function credentialEnv(
  creds: readonly ResolvedCredential[],
  command: string | null,
  registry: CliRegistry = CLI_REGISTRY,
): Record<string, string> {
  const env = placeholderEnv(creds);
  for (const c of creds) {
    const spec =
      c.type === 'cap_cli' && Object.hasOwn(registry, String(c.auth.cli_id))
        ? registry[String(c.auth.cli_id)]
        : undefined;
    if (spec?.env) env[spec.env] ??= placeholderOf(c);
  }
  const program =
    command !== null && creds.some((c) => c.type === 'command_secret')
      ? simpleCommandProgram(command)
      : null;
  if (!program) return env;
  for (const c of creds) {
    if (c.type !== 'command_secret' || !c.secrets.secret_value) continue;
    const commands = (c.auth.commands ?? []) as string[];
    if (commands.includes(program) && typeof c.auth.secret_name === 'string')
      env[c.auth.secret_name] = c.secrets.secret_value;
  }
  return env;
}

/** `api` with every exec's env extended by the session's credentials, read live per exec. */
export function withCredentialEnv(
  api: SandboxAgentApi,
  credentials: () => Promise<ResolvedCredential[]>,
  registry: () => CliRegistry = () => CLI_REGISTRY,
): SandboxAgentApi {
  const exec: SandboxAgentApi['exec'] = async (req) => {
    const creds = await credentials();
    if (!creds.length) return api.exec(req);
    const added = credentialEnv(creds, req.command, registry());
    return api.exec({ ...req, env: { ...(req.env ?? {}), ...added } });
  };
  // Long-lived processes (stdio MCP servers) see the placeholders too, never a command_secret.
  const startProcess: SandboxAgentApi['startProcess'] = async (spec) => {
    const creds = await credentials();
    if (!creds.length) return api.startProcess(spec);
    const added = credentialEnv(creds, null, registry());
    return api.startProcess({ ...spec, env: { ...(spec.env ?? {}), ...added } });
  };
  return overriding(api, { exec, startProcess });
}

/** A SandboxManager whose `run` hands out the credential-env api. */
export function managerWithCredentialEnv<M extends SandboxManager>(
  manager: M,
  credentials: (session: SessionRef) => Promise<ResolvedCredential[]>,
  registry: () => CliRegistry = () => CLI_REGISTRY,
): M {
  const run: SandboxManager['run'] = (session, fn) =>
    manager.run(session, (api) => fn(withCredentialEnv(api, () => credentials(session), registry)));
  return overriding(manager, { run } as Partial<M>);
}

/** `target` with some members replaced; every other method still runs on `target` itself. */
function overriding<T extends object>(target: T, members: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(members, prop)) return (members as Record<PropertyKey, unknown>)[prop];
      const v = Reflect.get(t, prop, t);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
}
