// #/evals and #/evals/:id — eval runs (GET /v1/svc/evals, …/:id, POST …/:id/cancel,
// GET …/:id/compare?with=). Guarantees (test/e2e/console/console-evals.test.ts):
// - every figure is the server's: the page never judges, sums or prices a case; a null score
//   or cost is "—", never 0;
// - a run's screen polls every 2 s while the run is queued or running and stops once it is
//   final; the list polls the same way while any run it shows is live;
// - Cancel is offered for a live run, and the start form, only to those who may write (viewers
//   see neither: useCanWrite, the gate of every write control); a refusal, such as the
//   server's 403, is shown next to the button;
// - Compare puts this run (the base) against another of the tenant's runs, case by case, with
//   the server's change per case; fixed and regressed rows are marked;
// - a new run takes an agent (optionally a version), an environment and JSONL cases, one case
//   object per line; a line that is not a JSON object is refused in the page, naming its line.
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, rest } from '../api';
import {
  ErrorText,
  Loaded,
  href,
  useCanWrite,
  useGet,
  usePaged,
  useRefresh,
  when,
  type Page,
} from '../ui';

const EVALS = '/v1/svc/evals';
const LIVE = new Set(['queued', 'running']);
const POLL_MS = 2_000;

type Usage = {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
};
type Check = { type: string; passed: boolean; reason: string };
type Case = {
  id: string;
  status: string;
  passed: boolean | null;
  score: number | null;
  reason: string | null;
  checks: Check[];
  session_id: string | null;
  usage: Usage;
  cost: number | null;
  duration_ms: number | null;
};
type Summary = {
  passed: number;
  failed: number;
  errored: number;
  cancelled: number;
  pending: number;
  total: number;
  score: number | null;
  usage: Usage;
  cost: number | null;
};
type Run = {
  id: string;
  name: string | null;
  status: string;
  agent: { id: string; version: number };
  environment_id: string;
  concurrency: number;
  currency: string;
  cases: Case[];
  summary: Summary;
  created_at: string;
  ended_at: string | null;
};
type Change = 'fixed' | 'regressed' | 'same' | 'only_base' | 'only_other' | 'pending';
type Comparison = {
  base: { id: string; agent: Run['agent']; summary: Summary };
  other: { id: string; agent: Run['agent']; summary: Summary };
  cases: Array<{ id: string; base: Case | null; other: Case | null; change: Change }>;
  summary: { fixed: number; regressed: number; same: number; unmatched: number };
};

const runPath = (id: string) => `${EVALS}/${encodeURIComponent(id)}`;
const runName = (r: Pick<Run, 'id' | 'name'>) => r.name ?? r.id;
const agentOf = (a: Run['agent']) => `${a.id} v${a.version}`;
const score = (n: number | null) => (n === null ? '—' : n.toFixed(2));
const money = (n: number | null, currency: string) =>
  n === null
    ? '—'
    : `${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })} ${currency}`;
const tokens = (u: Usage) => `${u.input_tokens} in / ${u.output_tokens} out`;
const duration = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
/** A case's verdict in words: passed / failed once judged, else its status. */
const verdict = (c: Case | null) =>
  !c ? '—' : c.passed === true ? 'passed' : c.passed === false ? 'failed' : c.status;

const RUN_COLUMNS = 'Name Agent Status Passed Failed Total Score Cost Created';

/** A table's header row; `cols` names its columns, separated by spaces. */
const Head = ({ cols }: { cols: string }) => (
  <thead>
    <tr>
      {cols.split(' ').map((h) => (
        <th key={h} scope="col">
          {h.replace('_', ' ')}
        </th>
      ))}
    </tr>
  </thead>
);

export function Evals() {
  const q = usePaged<Run>(EVALS);
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const runs = q.data?.pages.flatMap((p) => p.data) ?? [];
  const live = runs.some((r) => LIVE.has(r.status));
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => void refresh(EVALS), POLL_MS);
    return () => clearInterval(timer);
  }, [live]);
  return (
    <section>
      <h1>Evals</h1>
      <Loaded q={q} empty={!runs.length} emptyText="No eval runs yet.">
        <div className="scroll" role="region" aria-label="Eval runs list" tabIndex={0}>
          <table aria-label="Eval runs">
            <Head cols={RUN_COLUMNS} />
            <tbody>
              {runs.map((r) => (
                <tr key={r.id}>
                  <th scope="row">
                    <a href={href('evals', r.id)}>{runName(r)}</a>
                  </th>
                  <td>{agentOf(r.agent)}</td>
                  <td>{r.status}</td>
                  <td className="num">{r.summary.passed}</td>
                  <td className="num">{r.summary.failed}</td>
                  <td className="num">{r.summary.total}</td>
                  <td className="num">{score(r.summary.score)}</td>
                  <td className="num">{money(r.summary.cost, r.currency)}</td>
                  <td>{when(r.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {q.hasNextPage && (
          <button type="button" onClick={() => q.fetchNextPage()} disabled={q.isFetchingNextPage}>
            {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
          </button>
        )}
      </Loaded>
      {canWrite && <StartEval />}
    </section>
  );
}

/** JSONL → case objects; throws naming the first line that is not a JSON object. */
function parseCases(text: string): unknown[] {
  const cases: unknown[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      v = null;
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new Error(`cases line ${i + 1} is not a JSON object`);
    cases.push(v);
  });
  if (!cases.length) throw new Error('cases: give at least one case, one JSON object per line');
  return cases;
}

function StartEval() {
  const agents =
    useGet<Page<{ id: string; name: string; version: number }>>('/v1/agents?limit=100');
  const envs = useGet<Page<{ id: string; name: string }>>('/v1/environments?limit=100');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const v = Object.fromEntries(new FormData(e.currentTarget).entries()) as Record<string, string>;
    setError('');
    setBusy(true);
    try {
      const body: Record<string, unknown> = {
        agent: v.version ? { id: v.agent, version: Number(v.version) } : v.agent,
        environment_id: v.environment_id,
        cases: parseCases(v.cases ?? ''),
      };
      if (v.name) body.name = v.name;
      if (v.concurrency) body.concurrency = Number(v.concurrency);
      const run = await rest<Run>(EVALS, { method: 'POST', json: body });
      location.hash = `/evals/${encodeURIComponent(run.id)}`;
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" aria-label="Start an eval run" onSubmit={submit}>
      <h2>Start an eval run</h2>
      <label>
        Agent
        <select name="agent" required>
          {agents.data?.data.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} ({a.id}, v{a.version})
            </option>
          ))}
        </select>
      </label>
      <label>
        Version (optional: the current one)
        <input name="version" type="number" min={1} autoComplete="off" />
      </label>
      <label>
        Environment
        <select name="environment_id" required>
          {envs.data?.data.map((x) => (
            <option key={x.id} value={x.id}>
              {x.name} ({x.id})
            </option>
          ))}
        </select>
      </label>
      <label>
        Name (optional)
        <input name="name" autoComplete="off" />
      </label>
      <label>
        Concurrency (optional)
        <input name="concurrency" type="number" min={1} max={50} autoComplete="off" />
      </label>
      <label>
        Cases (JSONL: one {'{'}"prompt", "expected_text" | "rubric" | "check_command"{'}'} per line)
        <textarea name="cases" required rows={6} />
      </label>
      <button type="submit" disabled={busy}>
        Start
      </button>
      <ErrorText error={agents.error ?? envs.error ?? error} />
    </form>
  );
}

export function EvalDetail({ id }: { id: string }) {
  const path = runPath(id);
  const run = useQuery({
    queryKey: [path],
    queryFn: () => rest<Run>(path),
    refetchInterval: (q) => (LIVE.has(q.state.data?.status ?? '') ? POLL_MS : false),
  });
  const r = run.data;
  const s = r?.summary;
  const ended = s ? s.total - s.pending : 0;
  return (
    <section>
      <p>
        <a href="#/evals">← Evals</a>
      </p>
      <h1>Eval {r ? runName(r) : id}</h1>
      <Loaded q={run}>
        {r && s && (
          <>
            <dl className="facts" aria-label="Run">
              <dt>Status</dt>
              <dd aria-label="Run status">{r.status}</dd>
              <dt>Agent</dt>
              <dd>
                <a href={href('agents', r.agent.id)}>{agentOf(r.agent)}</a>
              </dd>
              <dt>Environment</dt>
              <dd>
                <code>{r.environment_id}</code>
              </dd>
              <dt>Cases</dt>
              <dd>
                {s.passed} passed · {s.failed} failed · {s.errored} errored · {s.cancelled}{' '}
                cancelled · {s.pending} pending · {s.total} total
              </dd>
              <dt>Score</dt>
              <dd>{score(s.score)}</dd>
              <dt>Tokens</dt>
              <dd>{tokens(s.usage)}</dd>
              <dt>Cost</dt>
              <dd>{money(s.cost, r.currency)}</dd>
              <dt>Concurrency</dt>
              <dd>{r.concurrency}</dd>
              <dt>Created</dt>
              <dd>{when(r.created_at)}</dd>
              <dt>Ended</dt>
              <dd>{when(r.ended_at)}</dd>
            </dl>
            {LIVE.has(r.status) && (
              <>
                <p>
                  {ended} of {s.total} cases ended
                </p>
                <progress aria-label="Cases ended" max={s.total} value={ended}>
                  {ended} of {s.total}
                </progress>
                <CancelRun id={id} />
              </>
            )}
            <CaseTable run={r} />
            <Compare run={r} />
          </>
        )}
      </Loaded>
    </section>
  );
}

function CancelRun({ id }: { id: string }) {
  const refresh = useRefresh();
  const canWrite = useCanWrite();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  if (!canWrite) return null;
  const cancel = async () => {
    setError('');
    setBusy(true);
    try {
      await rest(`${runPath(id)}/cancel`, { method: 'POST' });
      await refresh(EVALS);
    } catch (err) {
      const e = err as Error;
      setError(
        e instanceof ApiError && e.status === 403
          ? `Your role may not cancel runs (403): ${e.message}`
          : e.message,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <p>
      <button type="button" onClick={cancel} disabled={busy}>
        Cancel run
      </button>
      <ErrorText error={error} />
    </p>
  );
}

const CASE_COLUMNS = 'Case Status Result Score Reason Checks Session Tokens Cost Duration';

function CaseTable({ run }: { run: Run }) {
  return (
    <>
      <h2>Cases</h2>
      <div className="scroll" role="region" aria-label="Eval cases list" tabIndex={0}>
        <table aria-label="Eval cases">
          <Head cols={CASE_COLUMNS} />
          <tbody>
            {run.cases.map((c) => (
              <tr key={c.id} data-case={c.id}>
                <th scope="row">{c.id}</th>
                <td>{c.status}</td>
                <td className={c.passed === null ? undefined : c.passed ? 'pass' : 'fail'}>
                  {c.passed === null ? '—' : c.passed ? 'passed' : 'failed'}
                </td>
                <td className="num">{score(c.score)}</td>
                <td>{c.reason ?? '—'}</td>
                <td>
                  {c.checks.length ? (
                    <ul className="checks" aria-label={`Checks of ${c.id}`}>
                      {c.checks.map((k) => (
                        <li key={k.type}>
                          {k.type}: {k.passed ? 'passed' : 'failed'} — {k.reason}
                        </li>
                      ))}
                    </ul>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  {c.session_id ? <a href={href('sessions', c.session_id)}>{c.session_id}</a> : '—'}
                </td>
                <td className="num">{tokens(c.usage)}</td>
                <td className="num">{money(c.cost, run.currency)}</td>
                <td className="num">{duration(c.duration_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** This run (the base) against another of the tenant's runs, picked from the newest 100. */
function Compare({ run }: { run: Run }) {
  const others = useGet<Page<Run>>(`${EVALS}?limit=100`);
  const [picked, setPicked] = useState('');
  const [withId, setWithId] = useState('');
  const choices = (others.data?.data ?? []).filter((o) => o.id !== run.id);
  const path = `${runPath(run.id)}/compare?with=${encodeURIComponent(withId)}`;
  const cmp = useQuery({
    queryKey: [path],
    queryFn: () => rest<Comparison>(path),
    enabled: !!withId,
  });
  const c = cmp.data;
  return (
    <section aria-label="Compare runs" className="card">
      <h2>Compare</h2>
      {others.isError ? (
        <ErrorText error={others.error} />
      ) : !choices.length ? (
        <p className="empty">No other run to compare with.</p>
      ) : (
        <form
          className="inline"
          aria-label="Pick a run to compare"
          onSubmit={(e) => {
            e.preventDefault();
            setWithId(picked || choices[0]!.id);
          }}
        >
          <label>
            Compare with
            <select value={picked || choices[0]!.id} onChange={(e) => setPicked(e.target.value)}>
              {choices.map((o) => (
                <option key={o.id} value={o.id}>
                  {runName(o)} ({agentOf(o.agent)}, {o.status})
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Compare</button>
        </form>
      )}
      {withId && (
        <Loaded q={cmp}>
          {c && (
            <>
              <p role="status" aria-label="Comparison summary">
                {runName(run)} ({agentOf(c.base.agent)}) →{' '}
                {runName(
                  choices.find((o) => o.id === c.other.id) ?? { id: c.other.id, name: null },
                )}{' '}
                ({agentOf(c.other.agent)}): {c.summary.fixed} fixed · {c.summary.regressed}{' '}
                regressed · {c.summary.same} same · {c.summary.unmatched} unmatched
              </p>
              <div className="scroll" role="region" aria-label="Comparison list" tabIndex={0}>
                <table aria-label="Comparison">
                  <Head cols="Case This_run Other_run Change" />
                  <tbody>
                    {c.cases.map((k) => (
                      <tr key={k.id} data-case={k.id} className={`change-${k.change}`}>
                        <th scope="row">{k.id}</th>
                        <td>
                          {verdict(k.base)} ({score(k.base?.score ?? null)})
                        </td>
                        <td>
                          {verdict(k.other)} ({score(k.other?.score ?? null)})
                        </td>
                        <td>
                          <strong>{k.change.replace('_', ' ')}</strong>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </Loaded>
      )}
    </section>
  );
}
