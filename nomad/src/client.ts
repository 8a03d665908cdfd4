/**
 * A thin typed client over Nomad's HTTP API (https://developer.hashicorp.com/nomad/api-docs).
 * Only the endpoints the sandbox driver needs: jobs, allocations, evaluations, task logs.
 *
 * - The ACL token goes in `X-Nomad-Token`, and `namespace`/`region` in the query string, on every
 *   request.
 * - Blocking queries (`index` + `wait`) hold until the resource's index moves past `index` or the
 *   wait expires; the result carries `X-Nomad-Index` so the caller can block again. A return is
 *   no guarantee of a change (Nomad's own caveat).
 * - Paginated lists take `per_page`/`next_token`; the next token comes from `X-Nomad-NextToken`.
 * - Non-2xx answers throw `NomadError` with the status and Nomad's message (its plain-text body).
 */
import type {
  Allocation,
  AllocationListStub,
  Evaluation,
  Job,
  JobDeregisterResponse,
  JobRegisterResponse,
} from './types.js';

export interface NomadClientOptions {
  /** e.g. http://127.0.0.1:4646 (NOMAD_ADDR). */
  address: string;
  /** ACL token secret ID (NOMAD_TOKEN). */
  token?: string;
  /** Target namespace (NOMAD_NAMESPACE); Nomad's default is "default". */
  namespace?: string;
  /** Target region (NOMAD_REGION); Nomad forwards the request there. */
  region?: string;
  /** Injected fetch (tests, proxies); defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Timeout for non-blocking requests; default 30 s. Blocking requests get `wait` + 30 s. */
  requestTimeoutMs?: number;
}

export interface BlockingOptions {
  /** Return once the index is greater than this (the previous result's `index`). */
  index?: number;
  /** Longest hold: a Go duration ("5s", "2m") or milliseconds. Nomad's default is 5 min, max 10 min. */
  wait?: string | number;
  /** Aborts the request (e.g. when the watcher is closed). */
  signal?: AbortSignal;
}

export interface QueryResult<T> {
  data: T;
  /** X-Nomad-Index: pass as `index` to block for the next change. */
  index: number;
}

export interface PageResult<T> extends QueryResult<T[]> {
  /** X-Nomad-NextToken; absent on the last page. */
  nextToken?: string;
}

export interface ListAllocationsOptions extends BlockingOptions {
  /** ID prefix (an even number of hex characters). */
  prefix?: string;
  perPage?: number;
  nextToken?: string;
  /** Include AllocatedResources (default false in Nomad). */
  resources?: boolean;
  /** Include TaskStates (default true in Nomad). */
  taskStates?: boolean;
  /** Overrides the client's namespace; "*" lists every namespace the token may read. */
  namespace?: string;
}

export interface AllocLogsOptions {
  type?: 'stdout' | 'stderr';
  /** Where `offset` counts from; default "start". */
  origin?: 'start' | 'end';
  /** Bytes from `origin`. */
  offset?: number;
  signal?: AbortSignal;
}

/** A non-2xx answer from Nomad (or a transport failure, with status 0). */
export class NomadError extends Error {
  override readonly name = 'NomadError';
  constructor(
    readonly status: number,
    /** Nomad's message (its response body), or the transport error. */
    readonly nomadMessage: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(`Nomad ${method} ${path}: ${status ? `${status} ` : ''}${nomadMessage}`);
  }
}

export const isNotFound = (err: unknown): boolean =>
  err instanceof NomadError && err.status === 404;

/** "5s", "1m30s", "250ms" or milliseconds → milliseconds (Go duration subset). */
export function durationMs(wait: string | number): number {
  if (typeof wait === 'number') return wait;
  let total = 0;
  let matched = '';
  for (const m of wait.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    matched += m[0];
    const n = Number(m[1]);
    const unit = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[
      m[2] as 'ms'
    ];
    total += n * unit;
  }
  if (!matched || matched !== wait) throw new Error(`invalid duration ${JSON.stringify(wait)}`);
  return total;
}

const toGoDuration = (wait: string | number) =>
  typeof wait === 'number' ? `${Math.max(0, Math.round(wait))}ms` : wait;

type Query = Record<string, string | number | boolean | undefined>;

interface RawResult<T> {
  data: T;
  index: number;
  nextToken?: string;
}

interface RequestOptions {
  query?: Query;
  body?: unknown;
  blocking?: BlockingOptions;
  signal?: AbortSignal;
  /** Skip the default namespace (for calls whose namespace travels in the body too). */
  namespace?: string;
}

export class NomadClient {
  readonly address: string;
  readonly namespace: string | undefined;
  readonly region: string | undefined;
  private readonly token: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(opts: NomadClientOptions) {
    this.address = opts.address.replace(/\/+$/, '');
    this.token = opts.token || undefined;
    this.namespace = opts.namespace || undefined;
    this.region = opts.region || undefined;
    this.fetchImpl = opts.fetch ?? fetch;
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
  }

  /** POST /v1/jobs — registers (creates or updates) a job; the job's Namespace/Region default to the client's. */
  async registerJob(
    job: Job,
    opts: { enforceIndex?: boolean; jobModifyIndex?: number } = {},
  ): Promise<JobRegisterResponse> {
    const body: Record<string, unknown> = {
      Job: {
        ...job,
        Namespace: job.Namespace ?? this.namespace,
        Region: job.Region ?? this.region,
      },
    };
    if (opts.enforceIndex) {
      body.EnforceIndex = true;
      body.JobModifyIndex = opts.jobModifyIndex ?? 0;
    }
    const ns = job.Namespace ?? this.namespace;
    const res = await this.request<JobRegisterResponse>('POST', '/v1/jobs', {
      body,
      namespace: ns,
    });
    return res.data;
  }

  /** GET /v1/job/:id (blocking). Throws NomadError 404 when the job does not exist (or was purged). */
  async getJob(id: string, blocking?: BlockingOptions): Promise<QueryResult<Job>> {
    return this.request<Job>('GET', `/v1/job/${encodeURIComponent(id)}`, { blocking });
  }

  /** DELETE /v1/job/:id — stops (deregisters) the job; `purge` also removes it from Nomad's state. */
  async stopJob(
    id: string,
    opts: { purge?: boolean; global?: boolean } = {},
  ): Promise<JobDeregisterResponse> {
    const query: Query = {};
    if (opts.purge) query.purge = true;
    if (opts.global) query.global = true;
    const res = await this.request<JobDeregisterResponse>(
      'DELETE',
      `/v1/job/${encodeURIComponent(id)}`,
      { query },
    );
    return res.data;
  }

  /** GET /v1/job/:id/allocations (blocking). */
  async jobAllocations(
    id: string,
    opts: BlockingOptions & { all?: boolean } = {},
  ): Promise<QueryResult<AllocationListStub[]>> {
    const query: Query = opts.all ? { all: true } : {};
    return this.request<AllocationListStub[]>(
      'GET',
      `/v1/job/${encodeURIComponent(id)}/allocations`,
      { query, blocking: opts },
    );
  }

  /** GET /v1/allocation/:id (blocking); `id` must be the full UUID. */
  async getAllocation(id: string, blocking?: BlockingOptions): Promise<QueryResult<Allocation>> {
    return this.request<Allocation>('GET', `/v1/allocation/${encodeURIComponent(id)}`, {
      blocking,
    });
  }

  /** GET /v1/allocations — one page (blocking, paginated). */
  async listAllocations(
    opts: ListAllocationsOptions = {},
  ): Promise<PageResult<AllocationListStub>> {
    const query: Query = {
      prefix: opts.prefix || undefined,
      per_page: opts.perPage,
      next_token: opts.nextToken || undefined,
      resources: opts.resources,
      task_states: opts.taskStates,
    };
    return this.request<AllocationListStub[]>('GET', '/v1/allocations', {
      query,
      blocking: opts,
      namespace: opts.namespace ?? this.namespace,
    });
  }

  /** Every allocation, fetching page after page (`perPage` each) until no next token is returned. */
  async *iterateAllocations(
    opts: Omit<ListAllocationsOptions, 'nextToken' | 'index' | 'wait'> = {},
  ): AsyncGenerator<AllocationListStub, void, undefined> {
    let nextToken: string | undefined;
    do {
      const page = await this.listAllocations({ ...opts, nextToken });
      yield* page.data;
      nextToken = page.nextToken;
    } while (nextToken);
  }

  /** GET /v1/evaluation/:id (blocking). */
  async getEvaluation(id: string, blocking?: BlockingOptions): Promise<QueryResult<Evaluation>> {
    return this.request<Evaluation>('GET', `/v1/evaluation/${encodeURIComponent(id)}`, {
      blocking,
    });
  }

  /** GET /v1/client/fs/logs/:alloc_id?plain=true — a task's stdout/stderr so far (not followed). */
  async allocLogs(allocId: string, task: string, opts: AllocLogsOptions = {}): Promise<string> {
    const query: Query = {
      task,
      type: opts.type ?? 'stdout',
      origin: opts.origin ?? 'start',
      offset: opts.offset ?? 0,
      plain: true,
      follow: false,
    };
    const res = await this.request<string>(
      'GET',
      `/v1/client/fs/logs/${encodeURIComponent(allocId)}`,
      { query, signal: opts.signal },
      'text',
    );
    return res.data;
  }

  private url(path: string, query: Query): string {
    const u = new URL(this.address + path);
    for (const [k, v] of Object.entries(query))
      if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return u.toString();
  }

  private async request<T>(
    method: string,
    path: string,
    opts: RequestOptions,
    as: 'json' | 'text' = 'json',
  ): Promise<RawResult<T>> {
    const query: Query = { ...opts.query };
    const ns = 'namespace' in opts ? opts.namespace : this.namespace;
    if (ns) query.namespace = ns;
    if (this.region) query.region = this.region;
    let timeout = this.timeoutMs;
    const b = opts.blocking;
    if (b && b.index !== undefined) {
      query.index = b.index;
      if (b.wait !== undefined) query.wait = toGoDuration(b.wait);
      // Nomad holds up to `wait` (+ wait/16 jitter); default 5 minutes.
      timeout =
        Math.ceil((b.wait !== undefined ? durationMs(b.wait) : 300_000) * (17 / 16)) +
        this.timeoutMs;
    }
    const headers: Record<string, string> = { Accept: as === 'json' ? 'application/json' : '*/*' };
    if (this.token) headers['X-Nomad-Token'] = this.token;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] = 'application/json';
    }
    const signals = [AbortSignal.timeout(timeout)];
    const caller = opts.signal ?? b?.signal;
    if (caller) signals.push(caller);
    let res: Response;
    try {
      res = await this.fetchImpl(this.url(path, query), {
        method,
        headers,
        body,
        signal: AbortSignal.any(signals),
      });
    } catch (err) {
      if (caller?.aborted) throw caller.reason ?? err;
      throw new NomadError(0, (err as Error).message, method, path);
    }
    const text = await res.text();
    if (!res.ok) throw new NomadError(res.status, text.trim() || res.statusText, method, path);
    let data: T;
    if (as === 'text') data = text as T;
    else {
      try {
        data = (text ? JSON.parse(text) : null) as T;
      } catch {
        throw new NomadError(
          res.status,
          `invalid JSON in response: ${text.slice(0, 200)}`,
          method,
          path,
        );
      }
    }
    const index = Number(res.headers.get('X-Nomad-Index') ?? 0) || 0;
    const nextToken = res.headers.get('X-Nomad-NextToken') || undefined;
    return nextToken ? { data, index, nextToken } : { data, index };
  }
}
