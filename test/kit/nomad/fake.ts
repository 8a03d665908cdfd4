/**
 * A fake Nomad HTTP API for tests, following https://developer.hashicorp.com/nomad/api-docs for
 * the endpoints the client and the sandbox driver use:
 *
 *   POST|PUT /v1/jobs                    register ({ Job }); 400 on validation errors
 *   GET      /v1/jobs                    list (prefix)
 *   GET      /v1/job/:id                 read (blocking)
 *   DELETE   /v1/job/:id?purge=          deregister / purge
 *   GET      /v1/job/:id/allocations     (blocking)
 *   GET      /v1/allocations             list (blocking; prefix, per_page/next_token, resources, task_states, namespace=*)
 *   GET      /v1/allocation/:id          read (blocking)
 *   GET      /v1/evaluation/:id          read (blocking)
 *   GET      /v1/client/fs/logs/:alloc   task logs (plain=true or one JSON frame; not `follow`)
 *
 * Blocking queries hold until the query's index (the object's ModifyIndex, or the table's index)
 * passes `index` or `wait` expires (Go durations; default 5 min, capped at 10 min; no jitter), and
 * answer with X-Nomad-Index. ACLs: with `token` set, a request without `X-Nomad-Token` (or
 * `Authorization: Bearer`) equal to it gets 403 "Permission denied". `?namespace=` (default
 * "default") scopes every read and write; `?region=` other than the fake's gets 500 "No path to
 * region". Tasks RUN ON THIS MACHINE, unisolated (see fakeCluster.ts for what is modelled).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { FakeCluster, FakeError, type FakeNodeOptions } from './fakeCluster.js';

type Json = any;

export interface NomadFakeOptions {
  /** When set, every request must carry this ACL token. */
  token?: string;
  /** Default "global". */
  region?: string;
  /** Namespaces that exist; default ["default"]. */
  namespaces?: string[];
  node?: FakeNodeOptions;
}

export interface NomadFake {
  /** http://127.0.0.1:<port> */
  address: string;
  close(): Promise<void>;
  /** Current jobs (copies), every namespace. */
  jobs(): Json[];
  /** Every job body registered, as submitted (kept after a purge), for assertions on the spec. */
  submittedJobs: Json[];
  /** Current allocations (copies), every namespace. */
  allocations(): Json[];
  evaluations(): Json[];
  /** The task's process id while it runs. */
  pid(allocId: string, task?: string): number | undefined;
  /** Kills the task as the kernel's OOM killer would and reports it as Nomad does (137, oom_killed). */
  simulateOom(allocId: string, task?: string): void;
  /** Requests served, for assertions on query parameters and headers. */
  requests: Array<{
    method: string;
    path: string;
    query: Record<string, string>;
    token: string | undefined;
  }>;
}

function parseWait(raw: string | null): number {
  if (!raw) return 300_000;
  let total = 0;
  let matched = '';
  for (const m of raw.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    matched += m[0];
    total +=
      Number(m[1]) *
      { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms'];
  }
  if (matched !== raw)
    throw new FakeError(400, `Invalid wait time: time: invalid duration "${raw}"`);
  return Math.min(total, 600_000);
}

const STUB_FIELDS = [
  'ID',
  'EvalID',
  'Name',
  'Namespace',
  'NodeID',
  'NodeName',
  'JobID',
  'JobType',
  'JobVersion',
  'TaskGroup',
  'DesiredStatus',
  'DesiredDescription',
  'ClientStatus',
  'ClientDescription',
  'TaskStates',
  'DeploymentStatus',
  'FollowupEvalID',
  'RescheduleTracker',
  'PreemptedAllocations',
  'PreemptedByAllocation',
  'CreateIndex',
  'ModifyIndex',
  'CreateTime',
  'ModifyTime',
];

function stub(alloc: Json, opts: { resources?: boolean; taskStates?: boolean } = {}): Json {
  const s: Json = {};
  for (const f of STUB_FIELDS) s[f] = structuredClone(alloc[f]);
  if (opts.taskStates === false) delete s.TaskStates;
  if (opts.resources) s.AllocatedResources = structuredClone(alloc.AllocatedResources);
  return s;
}

async function readBody(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new FakeError(400, `Failed to decode request body: ${(e as Error).message}`);
  }
}

interface Answer {
  index: number;
  status?: number;
  body: Json;
  headers?: Record<string, string>;
}

export async function startNomadFake(opts: NomadFakeOptions = {}): Promise<NomadFake> {
  const region = opts.region ?? 'global';
  const cluster = new FakeCluster(region, new Set(opts.namespaces ?? ['default']), opts.node);
  const requests: NomadFake['requests'] = [];
  const submittedJobs: Json[] = [];

  /** Answers `compute()` once its index passes `?index=` or `?wait=` expires. */
  async function blocking(req: IncomingMessage, url: URL, compute: () => Answer): Promise<Answer> {
    const min = Number(url.searchParams.get('index') ?? 0);
    const waitMs = parseWait(url.searchParams.get('wait'));
    let answer = compute();
    if (!(min > 0) || answer.index > min) return answer;
    return new Promise<Answer>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        cluster.off('change', onChange);
        req.off('close', done);
        resolve(compute());
      };
      const onChange = () => {
        answer = compute();
        if (answer.index > min) done();
      };
      const timer = setTimeout(done, waitMs);
      cluster.on('change', onChange);
      req.once('close', done);
    });
  }

  const notFound = (index: number, what: string): Answer => ({ index, status: 404, body: what });

  async function route(req: IncomingMessage, url: URL, ns: string): Promise<Answer> {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    let m: RegExpMatchArray | null;
    if (path === '/v1/jobs' && (method === 'POST' || method === 'PUT')) {
      const body = await readBody(req);
      if (!body.Job) throw new FakeError(400, 'Job must be specified');
      const jobNs = body.Job.Namespace || ns;
      if (body.Job.Region && body.Job.Region !== region)
        throw new FakeError(500, 'No path to region');
      const key = cluster.jobKey(jobNs, body.Job.ID ?? '');
      if (body.EnforceIndex) {
        const cur = cluster.jobs.get(key);
        const want = Number(body.JobModifyIndex ?? 0);
        if ((want === 0 && cur) || (want !== 0 && cur?.JobModifyIndex !== want)) {
          throw new FakeError(
            400,
            `Enforcing job modify index ${want}: job ${cur ? `exists with conflicting job modify index: ${cur.JobModifyIndex}` : 'does not exist'}`,
          );
        }
      }
      submittedJobs.push(structuredClone(body.Job));
      const out = cluster.register(body.Job, jobNs);
      return { index: out.Index, body: out };
    }
    if (path === '/v1/jobs' && method === 'GET') {
      return blocking(req, url, () => {
        const prefix = url.searchParams.get('prefix') ?? '';
        const list = [...cluster.jobs.values()]
          .filter((j) => (ns === '*' || j.Namespace === ns) && j.ID.startsWith(prefix))
          .sort((a, b) => (a.ID < b.ID ? -1 : 1))
          .map((j) => ({
            ID: j.ID,
            Name: j.Name,
            Namespace: j.Namespace,
            Type: j.Type,
            Priority: j.Priority,
            Status: j.Status,
            Stop: j.Stop,
            Meta: j.Meta ?? null,
            CreateIndex: j.CreateIndex,
            ModifyIndex: j.ModifyIndex,
            JobModifyIndex: j.JobModifyIndex,
            SubmitTime: j.SubmitTime,
          }));
        return { index: cluster.tables.jobs, body: list };
      });
    }
    if ((m = path.match(/^\/v1\/job\/([^/]+)\/allocations$/)) && method === 'GET') {
      const id = decodeURIComponent(m[1]);
      return blocking(req, url, () => {
        const list = [...cluster.allocs.values()]
          .filter((r) => r.alloc.Namespace === ns && r.alloc.JobID === id)
          .sort((a, b) => a.alloc.CreateIndex - b.alloc.CreateIndex)
          .map((r) => stub(r.alloc));
        return { index: cluster.tables.allocs, body: list };
      });
    }
    if ((m = path.match(/^\/v1\/job\/([^/]+)$/))) {
      const id = decodeURIComponent(m[1]);
      if (method === 'GET') {
        return blocking(req, url, () => {
          const job = cluster.getJob(ns, id);
          return job
            ? { index: job.ModifyIndex, body: structuredClone(job) }
            : notFound(cluster.tables.jobs, 'job not found');
        });
      }
      if (method === 'DELETE') {
        const out = cluster.deregister(ns, id, url.searchParams.get('purge') === 'true');
        return { index: out.Index, body: out };
      }
    }
    if (path === '/v1/allocations' && method === 'GET') {
      const prefix = url.searchParams.get('prefix') ?? '';
      const perPageRaw = url.searchParams.get('per_page');
      const perPage = perPageRaw === null ? 0 : Number(perPageRaw);
      if (!Number.isInteger(perPage) || perPage < 0)
        throw new FakeError(400, `failed to parse value of "per_page" (${perPageRaw})`);
      const nextToken = url.searchParams.get('next_token') ?? '';
      const resources = url.searchParams.get('resources') === 'true';
      const taskStates = url.searchParams.get('task_states') !== 'false';
      return blocking(req, url, () => {
        const all = [...cluster.allocs.values()]
          .map((r) => r.alloc)
          .filter((a) => (ns === '*' || a.Namespace === ns) && a.ID.startsWith(prefix))
          .sort((a, b) => (a.ID < b.ID ? -1 : 1));
        const from = nextToken ? all.filter((a) => a.ID >= nextToken) : all;
        const page = perPage > 0 ? from.slice(0, perPage) : from;
        const headers: Record<string, string> = {};
        if (perPage > 0 && from.length > perPage) headers['X-Nomad-NextToken'] = from[perPage].ID;
        return {
          index: cluster.tables.allocs,
          body: page.map((a) => stub(a, { resources, taskStates })),
          headers,
        };
      });
    }
    if ((m = path.match(/^\/v1\/allocation\/([^/]+)$/)) && method === 'GET') {
      const id = decodeURIComponent(m[1]);
      return blocking(req, url, () => {
        const rec = cluster.allocs.get(id);
        return rec && (ns === '*' || rec.alloc.Namespace === ns)
          ? { index: rec.alloc.ModifyIndex, body: structuredClone(rec.alloc) }
          : notFound(cluster.tables.allocs, 'alloc not found');
      });
    }
    if ((m = path.match(/^\/v1\/evaluation\/([^/]+)$/)) && method === 'GET') {
      const id = decodeURIComponent(m[1]);
      return blocking(req, url, () => {
        const ev = cluster.evals.get(id);
        return ev && (ns === '*' || ev.Namespace === ns)
          ? { index: ev.ModifyIndex, body: structuredClone(ev) }
          : notFound(cluster.tables.evals, 'eval not found');
      });
    }
    if ((m = path.match(/^\/v1\/client\/fs\/logs\/([^/]+)$/)) && method === 'GET') {
      const id = decodeURIComponent(m[1]);
      const task = url.searchParams.get('task');
      const type = url.searchParams.get('type');
      if (!task) throw new FakeError(400, 'must provide task name');
      if (type !== 'stdout' && type !== 'stderr')
        throw new FakeError(400, 'must provide log type (stdout/stderr)');
      if (url.searchParams.get('follow') === 'true')
        throw new FakeError(501, 'the Nomad fake does not implement follow=true');
      const rec = cluster.allocs.get(id);
      if (!rec || rec.alloc.Namespace !== ns)
        throw new FakeError(404, `Unknown allocation "${id}"`);
      const file = cluster.logPath(id, task, type);
      const data = existsSync(file) ? readFileSync(file) : Buffer.alloc(0);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const origin = url.searchParams.get('origin') ?? 'start';
      if (origin !== 'start' && origin !== 'end')
        throw new FakeError(400, 'origin must be start or end');
      const start =
        origin === 'start' ? Math.min(offset, data.length) : Math.max(0, data.length - offset);
      const slice = data.subarray(start);
      if (url.searchParams.get('plain') === 'true')
        return { index: 0, body: slice, headers: { 'Content-Type': 'text/plain; charset=utf-8' } };
      const frame = slice.length
        ? {
            Data: slice.toString('base64'),
            File: `alloc/logs/${task}.${type}.0`,
            Offset: data.length,
          }
        : {};
      return { index: 0, body: frame };
    }
    throw new FakeError(404, 'Invalid URL');
  }

  const server = createServer((req, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const token = (req.headers['x-nomad-token'] as string | undefined) ?? bearer;
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      token,
    });
    const send = (a: Answer) => {
      const headers: Record<string, string> = {
        'X-Nomad-KnownLeader': 'true',
        'X-Nomad-LastContact': '0',
        ...a.headers,
      };
      if (a.index) headers['X-Nomad-Index'] = String(a.index);
      const status = a.status ?? 200;
      let payload: string | Buffer;
      if (Buffer.isBuffer(a.body)) payload = a.body;
      else if (typeof a.body === 'string' && status >= 400) {
        payload = a.body;
        headers['Content-Type'] ??= 'text/plain; charset=utf-8';
      } else {
        payload = JSON.stringify(a.body);
        headers['Content-Type'] ??= 'application/json';
      }
      if (!res.headersSent) res.writeHead(status, headers);
      res.end(payload);
    };
    (async () => {
      if (opts.token && token !== opts.token) throw new FakeError(403, 'Permission denied');
      const reqRegion = url.searchParams.get('region');
      if (reqRegion && reqRegion !== region) throw new FakeError(500, 'No path to region');
      const ns = url.searchParams.get('namespace') || 'default';
      return route(req, url, ns);
    })().then(send, (err: unknown) => {
      if (err instanceof FakeError) send({ index: 0, status: err.status, body: err.message });
      else send({ index: 0, status: 500, body: (err as Error)?.message ?? String(err) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    address: `http://127.0.0.1:${port}`,
    requests,
    submittedJobs,
    jobs: () => [...cluster.jobs.values()].map((j) => structuredClone(j)),
    allocations: () => [...cluster.allocs.values()].map((r) => structuredClone(r.alloc)),
    evaluations: () => [...cluster.evals.values()].map((e) => structuredClone(e)),
    pid: (allocId, task) => cluster.pid(allocId, task),
    simulateOom: (allocId, task) => cluster.simulateOom(allocId, task),
    async close() {
      await cluster.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
