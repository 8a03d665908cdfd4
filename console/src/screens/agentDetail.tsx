// #/agents/:id — every version of an agent, a line diff between two of them, and an edit form
// (an update creates a new version) that shows the equivalent API request as it is typed.
import { useState } from 'react';
import { rest } from '../api';
import {
  ErrorText,
  Json,
  Loaded,
  PagedList,
  useCanWrite,
  useGet,
  usePaged,
  useRefresh,
  when,
} from '../ui';

type Agent = {
  id: string;
  name: string;
  description: string | null;
  model: { id: string } | string;
  system: string | null;
  version: number;
  updated_at: string;
  [k: string]: unknown;
};

/** The editable part of an agent (what the form sends besides `version`). */
const editable = (a: Agent) => ({
  name: a.name,
  description: a.description,
  model: a.model,
  system: a.system,
  tools: a.tools,
  skills: a.skills,
  mcp_servers: a.mcp_servers,
  metadata: a.metadata,
});

export function AgentDetail({ id }: { id: string }) {
  const path = `/v1/agents/${encodeURIComponent(id)}`;
  const agent = useGet<Agent>(path);
  const versions = usePaged<Agent>(`${path}/versions`);
  const all = versions.data?.pages.flatMap((p) => p.data) ?? [];
  const canWrite = useCanWrite();
  return (
    <section>
      <p>
        <a href="#/agents">← Agents</a>
      </p>
      <h1>Agent {agent.data?.name ?? id}</h1>
      <Loaded q={agent}>
        {agent.data && (
          <p>
            <code>{agent.data.id}</code> · version {agent.data.version} · updated{' '}
            {when(agent.data.updated_at)}
          </p>
        )}
      </Loaded>
      <h2>Versions</h2>
      <PagedList
        q={versions}
        label="Versions"
        keyOf={(v) => String(v.version)}
        row={(v) => (
          <>
            <strong>v{v.version}</strong> — {v.name} ·{' '}
            {typeof v.model === 'string' ? v.model : v.model?.id} · {when(v.updated_at)}
          </>
        )}
      />
      {all.length > 1 && <VersionDiff versions={all} />}
      {agent.data && canWrite && (
        <EditAgent key={agent.data.version} agent={agent.data} path={path} />
      )}
    </section>
  );
}

function VersionDiff({ versions }: { versions: Agent[] }) {
  const [from, setFrom] = useState(versions[1]!.version);
  const [to, setTo] = useState(versions[0]!.version);
  const a = versions.find((v) => v.version === from);
  const b = versions.find((v) => v.version === to);
  const lines = a && b ? lineDiff(pretty(a), pretty(b)) : [];
  const pick = (label: string, value: number, set: (n: number) => void) => (
    <label>
      {label}
      <select value={value} onChange={(e) => set(Number(e.target.value))}>
        {versions.map((v) => (
          <option key={v.version} value={v.version}>
            v{v.version}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <div className="card">
      <h2>Compare versions</h2>
      <div className="inline">
        {pick('From version', from, setFrom)}
        {pick('To version', to, setTo)}
      </div>
      <pre className="diff" aria-label="Version diff" tabIndex={0}>
        {lines.map((l, i) => (
          <span key={i} className={l.op === '+' ? 'add' : l.op === '-' ? 'del' : undefined}>
            {l.op} {l.text}
            {'\n'}
          </span>
        ))}
      </pre>
    </div>
  );
}

/** The version's JSON without the fields every version differs in trivially. */
const pretty = (v: Agent) => {
  const { updated_at: _u, ...rest } = v;
  return JSON.stringify(rest, null, 2).split('\n');
};

/** A line diff by longest common subsequence (agents are small; O(n·m) is fine). */
export function lineDiff(a: string[], b: string[]): Array<{ op: ' ' | '+' | '-'; text: string }> {
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] =
        a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: Array<{ op: ' ' | '+' | '-'; text: string }> = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push({ op: '-', text: a[i++]! });
    else out.push({ op: '+', text: b[j++]! });
  }
  while (i < n) out.push({ op: '-', text: a[i++]! });
  while (j < m) out.push({ op: '+', text: b[j++]! });
  return out;
}

function EditAgent({ agent, path }: { agent: Agent; path: string }) {
  const [text, setText] = useState(() => JSON.stringify(editable(agent), null, 2));
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const refresh = useRefresh();
  let body: unknown = null;
  let parseError = '';
  try {
    body = { version: agent.version, ...(JSON.parse(text) as object) };
  } catch (e) {
    parseError = (e as Error).message;
  }
  const curl = [
    `curl -X POST "$AGENTFLEET_URL${path}" \\`,
    '  -H "x-api-key: $AGENTFLEET_API_KEY" \\',
    '  -H "content-type: application/json" \\',
    `  -d '${JSON.stringify(body ?? {}, null, 2).replaceAll("'", "'\\''")}'`,
  ].join('\n');
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setError('');
    setSaved('');
    if (parseError) return setError(`The JSON does not parse: ${parseError}`);
    try {
      const next = await rest<Agent>(path, { method: 'POST', json: body });
      setSaved(`Saved as version ${next.version}.`);
      await refresh(path, '/v1/agents');
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form className="card" aria-label="Edit agent" onSubmit={submit}>
      <h2>Edit agent</h2>
      <p>
        Saving creates a new version (optimistic: it fails if someone saved version{' '}
        {agent.version + 1} first).
      </p>
      <label>
        Agent JSON
        <textarea
          name="agent"
          rows={14}
          value={text}
          onChange={(e) => setText(e.target.value)}
          spellCheck={false}
        />
      </label>
      <button type="submit">Save new version</button>
      {saved && <p role="status">{saved}</p>}
      <ErrorText error={error} />
      <h3>The equivalent API request</h3>
      <Json value={curl} label="Equivalent API request" />
    </form>
  );
}
