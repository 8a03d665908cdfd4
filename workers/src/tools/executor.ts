import { TOOLSET_TYPE } from '@agentfleet/schemas';
import { urlSourceRefusal } from '@agentfleet/core';
import type {
  ConversationEvent,
  SandboxAgentApi,
  SandboxManager,
  SessionRef,
  ToolSpec,
  WebFetchPolicy,
  WebSearchPolicy,
} from '@agentfleet/core';

/** How a tool call is executed. */
export type ToolKind =
  | { kind: 'builtin'; name: BuiltinTool; settings?: Record<string, any> }
  | { kind: 'custom_client'; name: string }
  | { kind: 'custom_sandbox'; name: string; command: string }
  | { kind: 'custom_http'; name: string; endpoint: string; method: string }
  | { kind: 'coordinator'; name: string } // a coordinator's thread tools (../turn/threads.ts)
  | { kind: 'unknown'; name: string };

export const BUILTIN_TOOLS = [
  'bash',
  'read',
  'write',
  'edit',
  'glob',
  'grep',
  'web_fetch',
  'web_search',
] as const;
export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];

const str = (description: string) => ({ type: 'string', description });
/** Input schemas of agent_toolset_20260401, as the SDK types them. */
const BUILTIN_SPECS: Record<BuiltinTool, ToolSpec> = {
  bash: {
    name: 'bash',
    description:
      'Run a shell command in the session sandbox (working directory /workspace). Returns stdout, stderr and the exit code.',
    input_schema: {
      type: 'object',
      properties: {
        command: str('The shell command'),
        timeout_ms: { type: 'integer', description: 'Timeout in milliseconds (default 120000)' },
        restart: { type: 'boolean' },
      },
      required: ['command'],
    },
  },
  read: {
    name: 'read',
    description: 'Read a text file from the sandbox, with line numbers.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: str('Absolute path'),
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          description: '[first_line, last_line], 1-based',
        },
      },
      required: ['file_path'],
    },
  },
  write: {
    name: 'write',
    description: 'Write a file in the sandbox (creating directories), replacing its content.',
    input_schema: {
      type: 'object',
      properties: { file_path: str('Absolute path'), content: str('The full content') },
      required: ['file_path', 'content'],
    },
  },
  edit: {
    name: 'edit',
    description:
      'Replace an exact string in a file. Fails when old_string is missing, or appears more than once without replace_all.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: str('Absolute path'),
        old_string: str('Exact text to replace'),
        new_string: str('Replacement'),
        replace_all: { type: 'boolean' },
      },
      required: ['file_path', 'old_string', 'new_string'],
    },
  },
  glob: {
    name: 'glob',
    description: 'List files matching a glob pattern (supports **, *, ?).',
    input_schema: {
      type: 'object',
      properties: {
        pattern: str('Glob pattern'),
        path: str('Directory to search (default /workspace)'),
      },
      required: ['pattern'],
    },
  },
  grep: {
    name: 'grep',
    description: 'Search file contents with a regular expression; returns path:line:text.',
    input_schema: {
      type: 'object',
      properties: {
        pattern: str('Regular expression'),
        path: str('File or directory (default /workspace)'),
      },
      required: ['pattern'],
    },
  },
  web_fetch: {
    name: 'web_fetch',
    description: 'Fetch a URL (through the platform egress proxy) and return its text.',
    input_schema: { type: 'object', properties: { url: str('http(s) URL') }, required: ['url'] },
  },
  web_search: {
    name: 'web_search',
    description: 'Search the web and return results.',
    input_schema: {
      type: 'object',
      properties: { query: str('Search query') },
      required: ['query'],
    },
  },
};

/**
 * A web tool's description with the limits its config sets (domain filters, url_sources), so
 * the model does not spend calls on URLs that will be refused.
 */
function withLimits(spec: ToolSpec, c: Record<string, any> | undefined): ToolSpec {
  if (spec.name !== 'web_fetch' && spec.name !== 'web_search') return spec;
  const notes: string[] = [];
  if (c?.allowed_domains?.length)
    notes.push(`Only these domains and their subdomains: ${c.allowed_domains.join(', ')}.`);
  if (c?.blocked_domains?.length)
    notes.push(`Never these domains or their subdomains: ${c.blocked_domains.join(', ')}.`);
  if (spec.name === 'web_fetch' && c?.url_sources)
    notes.push('Only URLs that already appeared in the conversation can be fetched.');
  return notes.length ? { ...spec, description: `${spec.description} ${notes.join(' ')}` } : spec;
}

/** The tools offered to the model, honouring each toolset config's `enabled`. */
export function toolSpecs(tools: readonly any[]): ToolSpec[] {
  const out: ToolSpec[] = [];
  for (const t of tools ?? []) {
    if (t.type === TOOLSET_TYPE) {
      const enabled = new Map<string, boolean>(
        (t.configs ?? []).map((c: any) => [c.name, c.enabled !== false]),
      );
      const byDefault = t.default_config?.enabled !== false;
      for (const name of BUILTIN_TOOLS)
        if (enabled.get(name) ?? byDefault)
          out.push(
            withLimits(
              BUILTIN_SPECS[name],
              (t.configs ?? []).find((c: any) => c.name === name),
            ),
          );
    } else if (t.type === 'custom') {
      out.push({ name: t.name, description: t.description, input_schema: t.input_schema });
    }
  }
  return out;
}

export function classify(tools: readonly any[], name: string): ToolKind {
  for (const t of tools ?? []) {
    if (t.type === 'custom' && t.name === name) {
      if (!t.execution) return { kind: 'custom_client', name };
      if (t.execution.type === 'coordinator') return { kind: 'coordinator', name };
      if (t.execution.type === 'sandbox')
        return { kind: 'custom_sandbox', name, command: t.execution.command };
      return {
        kind: 'custom_http',
        name,
        endpoint: t.execution.endpoint,
        method: t.execution.method ?? 'POST',
      };
    }
  }
  if (
    (BUILTIN_TOOLS as readonly string[]).includes(name) &&
    toolSpecs(tools).some((s) => s.name === name)
  ) {
    // The tool's own config in the toolset: its settings (domain filters, …) apply to the call.
    const settings = (tools ?? [])
      .find((t) => t.type === TOOLSET_TYPE)
      ?.configs?.find((c: any) => c.name === name);
    return { kind: 'builtin', name: name as BuiltinTool, ...(settings ? { settings } : {}) };
  }
  return { kind: 'unknown', name };
}

export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  is_error: boolean;
}

export interface ToolContext {
  session: SessionRef;
  signal: AbortSignal;
}

export interface WebTools {
  fetch(input: { url: string }, session: SessionRef, policy?: WebFetchPolicy): Promise<ToolResult>;
  search(
    input: { query: string },
    session: SessionRef,
    policy?: WebSearchPolicy,
  ): Promise<ToolResult>;
}

/** The session's event log so far (web_fetch's url_sources reads it). */
export type SessionHistory = (session: SessionRef) => Promise<readonly ConversationEvent[]>;

const text = (t: string, isError = false): ToolResult => ({
  content: [{ type: 'text', text: t }],
  is_error: isError,
});

/**
 * Executes server-side tool calls. Every failure becomes an `is_error` result: a tool error is
 * something the model can react to, never a dead turn.
 */
export class ToolExecutor {
  constructor(
    private readonly deps: {
      sandbox: SandboxManager | null;
      web: WebTools | null;
      history?: SessionHistory;
    },
  ) {}

  async execute(kind: ToolKind, input: Record<string, any>, ctx: ToolContext): Promise<ToolResult> {
    try {
      switch (kind.kind) {
        case 'builtin':
          if (kind.name === 'web_fetch' || kind.name === 'web_search') {
            if (!this.deps.web)
              return text(`${kind.name} is not available in this deployment`, true);
            return await this.web(this.deps.web, kind.name, kind.settings ?? {}, input, ctx);
          }
          return await this.inSandbox(ctx, (api) => builtin(api, kind.name, input));
        case 'custom_sandbox':
          return await this.inSandbox(ctx, async (api) => {
            const r = await api.exec({
              command: kind.command,
              stdin: JSON.stringify(input),
              env: { TOOL_NAME: kind.name, TOOL_INPUT: JSON.stringify(input) },
            });
            return text(r.stdout || r.stderr || `(exit ${r.exitCode})`, r.exitCode !== 0);
          });
        case 'custom_http':
          // From the sandbox side: its only network is the session's outbound proxy (policy, log, credentials hook).
          return await this.inSandbox(ctx, (api) => httpFromSandbox(api, kind, input));
        case 'custom_client':
          return text('client-executed tools are answered by the client', true);
        default:
          return text(`unknown tool '${kind.name}'`, true);
      }
    } catch (err) {
      return text(`tool ${kind.name} failed: ${(err as Error)?.message ?? String(err)}`, true);
    }
  }

  /**
   * web_fetch and web_search with their tool config's settings applied (validated at agent
   * create: core/src/tools/webToolConfig.ts); url_sources is checked here, against the log.
   */
  private async web(
    web: WebTools,
    name: 'web_fetch' | 'web_search',
    c: Record<string, any>,
    input: Record<string, any>,
    ctx: ToolContext,
  ): Promise<ToolResult> {
    const domains = { allowedDomains: c.allowed_domains, blockedDomains: c.blocked_domains };
    if (name === 'web_search')
      return web.search(input as { query: string }, ctx.session, {
        ...domains,
        userLocation: c.user_location ?? null,
      });
    if (c.url_sources && typeof input.url === 'string') {
      if (!this.deps.history)
        return text('web_fetch: url_sources cannot be checked in this deployment', true);
      const why = urlSourceRefusal(input.url, c.url_sources, await this.deps.history(ctx.session));
      if (why) return text(`web_fetch refused: ${why}`, true);
    }
    return web.fetch(input as { url: string }, ctx.session, {
      ...domains,
      maxContentTokens: c.max_content_tokens ?? null,
    });
  }

  private async inSandbox(
    ctx: ToolContext,
    fn: (api: SandboxAgentApi) => Promise<ToolResult>,
  ): Promise<ToolResult> {
    if (!this.deps.sandbox) return text('no sandbox is configured in this deployment', true);
    return this.deps.sandbox.run(ctx.session, fn);
  }
}

const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;

/** Sends the tool input as JSON with curl inside the sandbox; the response body is the result. */
async function httpFromSandbox(
  api: SandboxAgentApi,
  kind: { name: string; endpoint: string; method: string },
  input: Record<string, any>,
): Promise<ToolResult> {
  const marker = '__agentfleet_http_status__';
  // curl reads only lowercase http_proxy: the sandbox's proxy is passed explicitly, for every host.
  const cmd = `curl -sS --max-time 30 --proxy "\${HTTP_PROXY:-\${http_proxy:-}}" --noproxy '' -X ${shellQuote(kind.method)} -H 'content-type: application/json' --data-binary @- -w ${shellQuote(`\n${marker}%{http_code}`)} ${shellQuote(kind.endpoint)}`;
  const r = await api.exec({ command: cmd, stdin: JSON.stringify(input), timeoutMs: 35_000 });
  const at = r.stdout.lastIndexOf(`\n${marker}`);
  if (r.exitCode !== 0 || at < 0)
    return text(
      `http tool ${kind.name}: request to ${kind.endpoint} failed: ${(r.stderr || r.stdout).trim() || `exit ${r.exitCode}`}`,
      true,
    );
  const status = Number(r.stdout.slice(at + marker.length + 1).trim());
  const body = r.stdout.slice(0, at);
  return text(
    status >= 400 || !status ? `HTTP ${status}\n${body}` : body,
    status >= 400 || !status,
  );
}

async function builtin(
  api: SandboxAgentApi,
  name: BuiltinTool,
  input: Record<string, any>,
): Promise<ToolResult> {
  switch (name) {
    case 'bash': {
      if (typeof input.command !== 'string') return text('bash: command is required', true);
      const r = await api.exec({
        command: input.command,
        timeoutMs: typeof input.timeout_ms === 'number' ? input.timeout_ms : undefined,
      });
      const parts = [
        r.stdout,
        r.stderr ? `[stderr]\n${r.stderr}` : '',
        r.timedOut ? '[timed out]' : '',
        r.truncated ? '[output truncated]' : '',
        `[exit code ${r.exitCode ?? r.signal}]`,
      ].filter(Boolean);
      return text(parts.join('\n'), r.exitCode !== 0);
    }
    case 'read': {
      const [first, last] = Array.isArray(input.view_range) ? input.view_range : [];
      const offset = typeof first === 'number' ? Math.max(0, first - 1) : undefined;
      const limit =
        typeof first === 'number' && typeof last === 'number' && last >= first
          ? last - first + 1
          : undefined;
      const r = await api.readFile(String(input.file_path), { offset, limit });
      const start = (offset ?? 0) + 1;
      return text(
        r.content
          .split('\n')
          .map((l, i) => `${String(start + i).padStart(6)}\t${l}`)
          .join('\n'),
      );
    }
    case 'write':
      await api.writeFile(String(input.file_path), String(input.content ?? ''));
      return text(
        `wrote ${Buffer.byteLength(String(input.content ?? ''))} bytes to ${input.file_path}`,
      );
    case 'edit': {
      const r = await api.edit(
        String(input.file_path),
        String(input.old_string),
        String(input.new_string),
        !!input.replace_all,
      );
      return text(`replaced ${r.replacements} occurrence(s) in ${input.file_path}`);
    }
    case 'glob': {
      const files = await api.glob(
        String(input.pattern),
        typeof input.path === 'string' ? input.path : undefined,
      );
      return text(files.length ? files.join('\n') : 'no files matched');
    }
    case 'grep': {
      const m = await api.grep(
        String(input.pattern),
        typeof input.path === 'string' ? input.path : undefined,
      );
      return text(
        m.length ? m.map((x) => `${x.path}:${x.line}:${x.text}`).join('\n') : 'no matches',
      );
    }
    default:
      return text(`unknown tool '${name}'`, true);
  }
}
