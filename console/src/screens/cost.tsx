// #/cost (operator only): the deployment's model spend from GET /v1/svc/cost_report and its price
// card (GET / PUT /v1/svc/cost_report/pricing). Guarantees (test/e2e/console/console-cost.test.ts):
// - the rows, totals and evidence are the report's own: the page never sums or prices anything;
//   the per-day chart is a second report, grouped by day, over the same range and filters;
// - a null cost is "—" with its reason (a partial row names its missing rates; a null total says
//   why), never 0; billed `cost`, `currency`, `source` and `reconciled_at` are shown per row as
//   the report gives them, so provider-billed rows need no change here;
// - the routes take only the operator key: a console session signed in with it is the operator
//   (me.operator); any other session gets the server's 403, shown as "needs the operator key";
// - the price card is replaced whole (PUT), as JSON; a refused card shows the server's 400.
import { useState } from 'react';
import { ApiError, rest } from '../api';
import { ErrorText, Loaded, useCanWrite, useGet, useRefresh, when } from '../ui';

const REPORT = '/v1/svc/cost_report';
const PRICING = `${REPORT}/pricing`;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The groupings in column order: the group_by value, the row field it sets, its header. */
const GROUPS = [
  ['tenant', 'tenant_id', 'Tenant'],
  ['agent', 'agent_id', 'Agent'],
  ['session', 'session_id', 'Session'],
  ['model', 'model', 'Model'],
  ['day', 'day', 'Day'],
  ['kind', 'kind', 'Kind'],
] as const;
const USAGE = [
  ['input_tokens', 'Input tokens'],
  ['output_tokens', 'Output tokens'],
  ['cache_read_input_tokens', 'Cache read tokens'],
  ['cache_creation_input_tokens', 'Cache creation tokens'],
] as const;
const KINDS = ['turn', 'compaction', 'grader', 'dream'];

type UsageField = (typeof USAGE)[number][0];
type Evidence = {
  source: string;
  is_invoice_grade: boolean;
  data_completeness: 'complete' | 'partial';
  reconciled_at: string | null;
  currency: string;
  /** Absent on a row that carries no usage (a billed-only row): shown as "—", not 0. */
  calls?: number;
  usage?: Partial<Record<UsageField, number>>;
};
type Row = Evidence & {
  cost: number | null;
  estimated_cost: number | null;
  missing_rates?: string[];
  [group: string]: unknown;
};
type Report = Evidence & {
  starting_at: string;
  ending_at: string;
  group_by: string[];
  total_cost: number | null;
  total_estimated_cost: number | null;
  rows: Row[];
};
type Rates = Partial<Record<UsageField, number>>;
type PriceCard = { currency: string; services: Record<string, Rates>; updated_at: string | null };

/** What the report is asked for; `ending_at` absent is "now" (the server's default). */
type Query = {
  starting_at: string;
  ending_at?: string;
  group_by: string[];
  tenant_id?: string;
  agent_id?: string;
  kind?: string;
};

const reportUrl = (q: Query, groupBy = q.group_by) => {
  const p = new URLSearchParams({ starting_at: q.starting_at, group_by: groupBy.join(',') });
  for (const k of ['ending_at', 'tenant_id', 'agent_id', 'kind'] as const) {
    const v = q[k];
    if (v) p.set(k, v);
  }
  return `${REPORT}?${p}`;
};
/** `days` back from the current whole hour, so the query (and its cache key) is stable. */
const lastDays = (days: number) =>
  new Date(Math.floor(Date.now() / HOUR) * HOUR - days * DAY).toISOString();
const money = (n: number, currency: string) =>
  `${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })} ${currency}`;
const count = (n: number | undefined) => (n === undefined ? '—' : n.toLocaleString('en-US'));

/** The server's 403 in the words an operator acts on; any other error as it is. */
function CostError({ error }: { error: Error | null }) {
  if (error instanceof ApiError && error.status === 403)
    return (
      <div className="error" role="alert">
        <p>
          <strong>The cost report needs the operator key.</strong> It covers every tenant&apos;s
          spend, so only the deployment&apos;s operator sees it: sign in to the console with the
          operator API key (<code>API_KEY</code>).
        </p>
        <p>The server answered 403: {error.message}</p>
      </div>
    );
  return <ErrorText error={error} />;
}

export function Cost() {
  const card = useGet<PriceCard>(PRICING);
  const [query, setQuery] = useState<Query>(() => ({
    starting_at: lastDays(7),
    group_by: ['tenant', 'model'],
  }));
  return (
    <section>
      <h1>Cost</h1>
      {card.isPending ? (
        <p role="status">Loading…</p>
      ) : card.isError ? (
        <CostError error={card.error} />
      ) : (
        <>
          <p>
            What the deployment&apos;s model calls cost, every tenant: usage the platform metered,
            priced by the price card below, and billed cost where a provider&apos;s bill was read.
          </p>
          <ReportForm query={query} onQuery={setQuery} />
          <ReportView url={reportUrl(query)} />
          <DayChart url={reportUrl(query, ['day'])} />
          <PriceCardView card={card.data} />
        </>
      )}
    </section>
  );
}

function ReportForm({ query, onQuery }: { query: Query; onQuery: (q: Query) => void }) {
  const [range, setRange] = useState('7');
  const [error, setError] = useState('');
  const submit = (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const str = (k: string) => (f.get(k) as string | null)?.trim() || undefined;
    const group_by = GROUPS.map(([g]) => g).filter((g) => f.getAll('group_by').includes(g));
    setError('');
    if (!group_by.length) return setError('Pick at least one grouping.');
    let starting_at: string;
    let ending_at: string | undefined;
    if (range !== 'custom') starting_at = lastDays(Number(range));
    else {
      const from = str('from');
      const to = str('to');
      if (!from || !to) return setError('A custom range needs a first and a last day.');
      if (to < from) return setError('The last day is before the first day.');
      starting_at = `${from}T00:00:00.000Z`;
      // The last day is included: the range ends at the next day's midnight (UTC).
      ending_at = new Date(Date.parse(`${to}T00:00:00.000Z`) + DAY).toISOString();
    }
    onQuery({
      starting_at,
      ending_at,
      group_by,
      tenant_id: str('tenant_id'),
      agent_id: str('agent_id'),
      kind: str('kind'),
    });
  };
  return (
    <form className="filters card" aria-label="Cost report" onSubmit={submit}>
      <label>
        Range
        <select name="range" value={range} onChange={(e) => setRange(e.target.value)}>
          <option value="7">Last 7 days</option>
          <option value="30">Last 30 days</option>
          <option value="custom">Custom (UTC days)</option>
        </select>
      </label>
      {range === 'custom' && (
        <div className="inline">
          <label>
            First day (UTC)
            <input type="date" name="from" required />
          </label>
          <label>
            Last day (UTC)
            <input type="date" name="to" required />
          </label>
        </div>
      )}
      <fieldset>
        <legend>Group by</legend>
        {GROUPS.map(([g, , text]) => (
          <label key={g} className="check">
            <input
              type="checkbox"
              name="group_by"
              value={g}
              defaultChecked={query.group_by.includes(g)}
            />{' '}
            {text}
          </label>
        ))}
      </fieldset>
      <div className="inline">
        <label>
          Tenant id filter
          <input name="tenant_id" autoComplete="off" defaultValue={query.tenant_id} />
        </label>
        <label>
          Agent id filter
          <input name="agent_id" autoComplete="off" defaultValue={query.agent_id} />
        </label>
        <label>
          Kind filter
          <select name="kind" defaultValue={query.kind ?? ''}>
            <option value="">any</option>
            {KINDS.map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </label>
      </div>
      <button type="submit">Show report</button>
      <ErrorText error={error} />
    </form>
  );
}

/** A total, or "—" with the reason it is null. */
function Total({ r, field }: { r: Report; field: 'total_estimated_cost' | 'total_cost' }) {
  const v = r[field];
  if (v !== null) return <>{money(v, r.currency)}</>;
  const why =
    field === 'total_estimated_cost'
      ? 'partial: some usage has no rate on the price card (see Completeness)'
      : r.rows.some((row) => row.cost !== null)
        ? 'not every row has a billed cost'
        : 'no provider bill was read for this range; the estimate is the metered usage priced by the price card';
  return <>— ({why})</>;
}

function Completeness({ e }: { e: Evidence & { missing_rates?: string[] } }) {
  if (e.data_completeness !== 'partial') return <>{e.data_completeness}</>;
  return (
    <>
      partial
      {e.missing_rates?.length ? <> — missing rates: {e.missing_rates.join(', ')}</> : null}
    </>
  );
}

/** The columns after the groupings, as `Figures` fills them. */
const FIGURES = [
  'Calls',
  ...USAGE.map(([, text]) => text),
  'Estimated cost',
  'Cost (billed)',
  'Source',
  'Completeness',
  'Invoice grade',
  'Reconciled',
];
/** A row's (or the totals') counts, costs and evidence; a null cost is "—". */
function Figures(p: { e: Evidence; estimated: number | null; cost: number | null }) {
  const price = (n: number | null) => (n === null ? '—' : money(n, p.e.currency));
  return (
    <>
      <td className="num">{count(p.e.calls)}</td>
      {USAGE.map(([f]) => (
        <td key={f} className="num">
          {count(p.e.usage?.[f])}
        </td>
      ))}
      <td className="num">{price(p.estimated)}</td>
      <td className="num">{price(p.cost)}</td>
      <td>{p.e.source}</td>
      <td>
        <Completeness e={p.e} />
      </td>
      <td>{p.e.is_invoice_grade ? 'yes' : 'no'}</td>
      <td>{when(p.e.reconciled_at)}</td>
    </>
  );
}

function ReportView({ url }: { url: string }) {
  const q = useGet<Report>(url);
  const r = q.data;
  if (!r) return q.isError ? <CostError error={q.error} /> : <Loaded q={q}>{null}</Loaded>;
  const groups = GROUPS.filter(([g]) => r.group_by.includes(g));
  return (
    <>
      <h2>Report</h2>
      <dl className="facts" aria-label="Report totals">
        <dt>Range</dt>
        <dd>
          {r.starting_at} → {r.ending_at} (UTC, whole hours)
        </dd>
        <dt>Calls</dt>
        <dd>{count(r.calls)}</dd>
        <dt>Total estimated cost</dt>
        <dd>
          <Total r={r} field="total_estimated_cost" />
        </dd>
        <dt>Total cost (billed)</dt>
        <dd>
          <Total r={r} field="total_cost" />
        </dd>
      </dl>
      {!r.rows.length && <p className="empty">No model calls in this range.</p>}
      <div className="scroll" role="region" aria-label="Cost rows" tabIndex={0}>
        <table aria-label="Cost report">
          <thead>
            <tr>
              {groups.map(([g, , text]) => (
                <th key={g} scope="col">
                  {text}
                </th>
              ))}
              {FIGURES.map((text) => (
                <th key={text} scope="col">
                  {text}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {r.rows.map((row) => (
              <tr key={JSON.stringify([row.source, ...groups.map(([, field]) => row[field])])}>
                {groups.map(([g, field]) => (
                  <td key={g}>{row[field] == null ? '—' : <code>{String(row[field])}</code>}</td>
                ))}
                <Figures e={row} estimated={row.estimated_cost} cost={row.cost} />
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row" colSpan={groups.length}>
                Total
              </th>
              <Figures e={r} estimated={r.total_estimated_cost} cost={r.total_cost} />
            </tr>
          </tfoot>
        </table>
      </div>
    </>
  );
}

/**
 * The metered usage's estimated cost per UTC day of the range (the `svc_metered` rows; billed
 * rows are in the table), one bar a day; a partial day is a marked stub.
 */
function DayChart({ url }: { url: string }) {
  const q = useGet<Report>(url);
  const r = q.data;
  if (!r) return q.isError ? <CostError error={q.error} /> : <Loaded q={q}>{null}</Loaded>;
  const metered = r.rows.filter((row) => row.source === 'svc_metered');
  const byDay = new Map(metered.map((row) => [String(row.day), row]));
  const days: string[] = [];
  for (let d = Date.parse(r.starting_at.slice(0, 10)); d < Date.parse(r.ending_at); d += DAY)
    days.push(new Date(d).toISOString().slice(0, 10));
  const max = Math.max(0, ...metered.map((row) => row.estimated_cost ?? 0));
  const label = (day: string) => {
    const row = byDay.get(day);
    if (!row) return `${day}: no calls`;
    if (row.estimated_cost === null) return `${day}: — (partial, ${count(row.calls)} calls)`;
    return `${day}: ${money(row.estimated_cost, row.currency)} (${count(row.calls)} calls)`;
  };
  return (
    <figure className="chart">
      <figcaption>
        <h2>Estimated cost per day (UTC)</h2>
        {max > 0 ? `Tallest bar: ${money(max, r.currency)}.` : 'No priced cost in this range.'}
        {metered.some((row) => row.estimated_cost === null) &&
          ' Short orange bars are partial days: some of their usage has no rate, so no cost.'}
      </figcaption>
      <svg
        viewBox={`0 0 ${days.length * 10} 100`}
        preserveAspectRatio="none"
        role="list"
        aria-label="Estimated cost per day"
      >
        {days.map((day, i) => {
          const row = byDay.get(day);
          const partial = row !== undefined && row.estimated_cost === null;
          const h = max > 0 ? Math.max(1, ((row?.estimated_cost ?? 0) / max) * 100) : 0;
          const height = partial ? 6 : row ? h : 0;
          return (
            <g key={day} role="listitem" aria-label={label(day)}>
              <title>{label(day)}</title>
              <rect
                className={partial ? 'bar partial' : 'bar'}
                x={i * 10 + 1}
                width={8}
                y={100 - height}
                height={height}
              />
            </g>
          );
        })}
      </svg>
      <div className="chart-axis" aria-hidden="true">
        <span>{days[0]}</span>
        <span>{days.at(-1)}</span>
      </div>
    </figure>
  );
}

function PriceCardView({ card }: { card: PriceCard }) {
  const canWrite = useCanWrite();
  const refresh = useRefresh();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState('');
  const services = Object.entries(card.services).sort(([a], [b]) => a.localeCompare(b));
  const save = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const text = (e.currentTarget.elements.namedItem('card') as HTMLTextAreaElement).value;
    setError('');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      return setError(`The price card is not JSON: ${(err as Error).message}`);
    }
    try {
      await rest(PRICING, { method: 'PUT', json });
      setOpen(false);
      // Every report priced by the old card is stale with it.
      await refresh(REPORT);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <h2>Price card</h2>
      <p>
        Rates in {card.currency} per million tokens;{' '}
        {card.updated_at
          ? `set ${when(card.updated_at)}.`
          : "the vendors' public list prices (never set)."}{' '}
        A rate not set prices nothing: usage it would price makes the report partial.
      </p>
      <div className="scroll" role="region" aria-label="Price card rates" tabIndex={0}>
        <table aria-label="Price card">
          <thead>
            <tr>
              <th scope="col">Service</th>
              {USAGE.map(([f, text]) => (
                <th key={f} scope="col">
                  {text}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {services.map(([service, rates]) => (
              <tr key={service}>
                <th scope="row">
                  <code>{service}</code>
                </th>
                {USAGE.map(([f]) => (
                  <td key={f} className="num">
                    {rates[f] === undefined ? 'not set' : rates[f]}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {canWrite && (
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
          Edit price card
        </button>
      )}
      {open && (
        <form className="card" aria-label="Price card editor" onSubmit={save}>
          <label>
            Price card JSON (replaces the whole card)
            <textarea
              name="card"
              rows={16}
              defaultValue={JSON.stringify(
                { currency: card.currency, services: card.services },
                null,
                2,
              )}
            />
          </label>
          <button type="submit">Save price card</button>
          <ErrorText error={error} />
        </form>
      )}
    </>
  );
}
