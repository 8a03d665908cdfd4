/**
 * Sandbox warmup, in order: (1) probe `exec true` until it answers (PROBE_ATTEMPTS); (2) read
 * the warm marker: non-empty means /workspace is populated, skip (3); (3) restore the latest
 * snapshot; (4) write the declared resources (files; directories, created empty: a mounted
 * memory store's) — one that cannot be prepared FAILS the warmup. The resources are listed
 * before the sandbox starts: the read-only ones (a read_only memory store's tree) go to the
 * driver in the spec (SandboxSpec.readOnlyTrees), so they are read-only from the start and
 * refreshed only when a sandbox starts;
 * (5) set the outbound context; (5b) prepare the workspace (the session's repositories: cloned
 * through the proxy unless already there, core/src/repositories/checkout.ts); (6) set the backup context: only from here on is the sandbox
 * snapshotted, so a half-warmed sandbox never overwrites a good snapshot; (7) write a fresh
 * marker. A failed warmup stops the sandbox (snapshotting it first only if it was warm before).
 * Tested in core/test/sandbox.manager.test.ts (warmup order, failing resources, marker rerun).
 */
import { shellQuote, sleep } from '../../util.js';
import type { ReadOnlyTree, SandboxAgentApi, SandboxHandle } from '../port.js';
import { SandboxAgentError } from '../protocol.js';
import { restoreSnapshot, writeSnapshot } from './storage.js';
import {
  errMessage,
  isClosed,
  PROBE_ATTEMPTS,
  SandboxWarmupError,
  WARM_MARKER,
  type Entry,
  type ManagerContext,
  type SandboxResource,
} from './types.js';

async function probe(ctx: ManagerContext, api: SandboxAgentApi): Promise<void> {
  const probeAttempts = ctx.deps.probeAttempts ?? PROBE_ATTEMPTS;
  const probeDelayMs = ctx.deps.probeDelayMs ?? 200;
  let last: unknown;
  for (let attempt = 1; attempt <= probeAttempts; attempt++) {
    try {
      const r = await api.exec({ command: 'true', timeoutMs: 10_000 });
      if (r.exitCode === 0) return;
      last = new Error(`exit code ${r.exitCode}`);
    } catch (err) {
      last = err;
      if (isClosed(err)) break;
    }
    if (attempt < probeAttempts) await sleep(Math.min(2000, probeDelayMs * attempt));
  }
  throw new SandboxWarmupError(
    'probe',
    `sandbox did not answer 'exec true' (${probeAttempts} attempts): ${errMessage(last)}`,
  );
}

/** The warm marker's content, '' when it is missing. */
export async function readMarker(api: SandboxAgentApi): Promise<string> {
  try {
    return (await api.readFile(WARM_MARKER)).content.trim();
  } catch (err) {
    if (err instanceof SandboxAgentError && err.kind === 'not_found') return '';
    throw err;
  }
}

/** A fresh empty directory in the sandbox (what was there goes); a failure fails the warmup. */
async function makeDirectory(api: SandboxAgentApi, path: string): Promise<void> {
  const quoted = shellQuote(path);
  const r = await api
    .exec({ command: `rm -rf -- ${quoted} && mkdir -p -- ${quoted}`, timeoutMs: 30_000 })
    .catch((err) => {
      throw new SandboxWarmupError('resources', `directory ${path}: ${errMessage(err)}`, path);
    });
  if (r.exitCode !== 0)
    throw new SandboxWarmupError(
      'resources',
      `directory ${path} could not be created in the sandbox: ${r.stderr.trim() || `exit code ${r.exitCode}`}`,
      path,
    );
}

async function listResources(ctx: ManagerContext, e: Entry): Promise<SandboxResource[]> {
  try {
    return await ctx.deps.resources(e.ref);
  } catch (err) {
    throw new SandboxWarmupError(
      'resources',
      `listing the session's resources failed: ${errMessage(err)}`,
    );
  }
}

async function resourceData(r: SandboxResource): Promise<Uint8Array> {
  try {
    return await r.data();
  } catch (err) {
    throw new SandboxWarmupError(
      'resources',
      `resource ${r.path} could not be prepared: ${errMessage(err)}`,
      r.path,
    );
  }
}

/** The read-only trees among the resources (SandboxResource.readOnly), for the driver. */
async function readOnlyTrees(list: SandboxResource[]): Promise<ReadOnlyTree[]> {
  const trees: ReadOnlyTree[] = [];
  for (const dir of list.filter((r) => r.readOnly && r.directory)) {
    const files: ReadOnlyTree['files'] = [];
    for (const r of list)
      if (r.readOnly && !r.directory && r.path.startsWith(`${dir.path}/`))
        files.push({ path: r.path.slice(dir.path.length + 1), data: await resourceData(r) });
    trees.push({ path: dir.path, files });
  }
  return trees;
}

/** Writes the resources through the agent, but the read-only ones (the driver placed those). */
async function mountResources(api: SandboxAgentApi, list: SandboxResource[]): Promise<number> {
  for (const r of list) {
    if (r.readOnly) continue;
    if (r.directory) {
      await makeDirectory(api, r.path);
      continue;
    }
    const data = await resourceData(r);
    try {
      await api.writeFile(r.path, data);
    } catch (err) {
      throw new SandboxWarmupError(
        'resources',
        `resource ${r.path} could not be written into the sandbox: ${errMessage(err)}`,
        r.path,
      );
    }
  }
  return list.length;
}

/** Warms the session's sandbox up (starting one if needed); `watchExit` follows a started one. */
export async function warmup(
  ctx: ManagerContext,
  e: Entry,
  watchExit: (e: Entry, h: SandboxHandle) => void,
): Promise<SandboxHandle> {
  const { deps, deadHandles, emit, setState, log, now } = ctx;
  const t0 = Date.now();
  const sessionId = e.ref.sessionId;
  setState(e, 'warming-up');
  let h = e.handle;
  try {
    const list = await listResources(ctx, e);
    if (!h) {
      const trees = await readOnlyTrees(list);
      try {
        const spec = await deps.specFor(e.ref);
        h = await deps.driver.start(trees.length ? { ...spec, readOnlyTrees: trees } : spec);
      } catch (err) {
        throw new SandboxWarmupError('start', `starting the sandbox failed: ${errMessage(err)}`);
      }
      e.handle = h;
      watchExit(e, h);
    }
    const api = h.api;
    await probe(ctx, api); // (1)
    const marker = await readMarker(api); // (2)
    const restored = marker ? null : await restoreSnapshot(ctx, e, api); // (3)
    const resources = await mountResources(api, list); // (4)
    try {
      await deps.setOutboundContext?.({ ...e.ref, sandboxId: h.id }); // (5)
    } catch (err) {
      throw new SandboxWarmupError(
        'outbound',
        `setting the outbound context failed: ${errMessage(err)}`,
      );
    }
    if (deps.prepareWorkspace) {
      try {
        await deps.prepareWorkspace(e.ref, api); // (5b)
      } catch (err) {
        if (err instanceof SandboxWarmupError) throw err;
        throw new SandboxWarmupError(
          'repositories',
          `preparing the workspace failed: ${errMessage(err)}`,
        );
      }
    }
    e.backup = { ...e.ref }; // (6)
    try {
      await api.writeFile(
        WARM_MARKER,
        `${JSON.stringify({ sandboxId: h.id, warmedAt: new Date(now()).toISOString() })}\n`,
      ); // (7)
    } catch (err) {
      throw new SandboxWarmupError(
        'marker',
        `writing the warm marker failed: ${errMessage(err)}`,
        WARM_MARKER,
      );
    }
    if (e.handle !== h || deadHandles.has(h))
      throw new SandboxWarmupError('start', 'the sandbox exited during warmup');
    setState(e, 'active');
    emit('warmup', sessionId, {
      sandboxId: h.id,
      restored,
      skippedRestore: !!marker,
      resources,
      durationMs: Date.now() - t0,
    });
    return h;
  } catch (err) {
    emit('warmup_failed', sessionId, {
      error: errMessage(err),
      step: err instanceof SandboxWarmupError ? err.step : undefined,
    });
    log.warn('sandbox warmup failed', { sessionId, error: errMessage(err) });
    if (h && e.handle === h && !e.stopping) {
      // a sandbox that was active before (marker rerun) keeps its work; a fresh one has none to keep
      const hadBackup = e.backup;
      setState(e, 'stopping');
      const stopping = (async () => {
        if (hadBackup && !deadHandles.has(h!))
          await writeSnapshot(ctx, e, h!, 'warmup-failed').catch(() => {});
        await h!.stop().catch(() => {});
      })();
      e.stopping = stopping;
      await stopping;
      e.stopping = null;
      e.handle = null;
      e.backup = null;
      setState(e, 'cold');
    }
    throw err;
  }
}
