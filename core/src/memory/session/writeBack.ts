/**
 * The memory write-back when a turn goes idle: each mounted store's directory in the sandbox is
 * listed and read, diffed against its manifest (what was mounted: ./mount.ts) by content
 * sha256, and every change goes through the memory service as the session (`session_actor`),
 * each creating a version:
 * - a new file → create; a changed file → update with the `content_sha256` precondition of the
 *   MOUNTED version; a removed file → delete with that `expected_content_sha256`.
 * - A conflict (409: the memory changed or was deleted meanwhile, or the new file's path was
 *   taken) loses nothing: the agent's content is saved as a NEW memory at the sibling path
 *   `<path>.conflict-<UTC stamp>` (also written into the sandbox), the sandbox file at `<path>`
 *   is refreshed to the store's current content (removed if the memory is gone), and a
 *   `session.warning` (`memory_conflict`) names the path, the mounted, current and agent hashes
 *   and where the agent's content was saved. A delete that conflicts keeps the memory and puts
 *   its current content back in the sandbox.
 * - `read_only` stores are never written: each changed path gets one `session.warning`
 *   (`memory_not_written`, reason `read_only`) until it changes again.
 * - A file that cannot become a memory (bad path, over 100 kB, binary, unreadable) is left in
 *   the sandbox and reported once (`memory_not_written`).
 * After the write-back the manifest records the new base, so a change is written once.
 * Proved by test/e2e/memory/memory-session.test.ts.
 */
import type { EventDraft } from '../../events/log.js';
import { ApiError } from '../../errors.js';
import { shellQuote as quote } from '../../util.js';
import type { SandboxAgentApi } from '../../sandbox/port.js';
import { SandboxAgentError } from '../../sandbox/protocol.js';
import type { MemoryActor } from '../records.js';
import { manifestPath, contentSha256, type MemoryManifest } from './mount.js';
import type { SessionMemoryResource } from './resources.js';

/** What the write-back needs of platform.memory (MemoryService satisfies it). */
export interface MemoryWriter {
  createMemory(
    tenant: string,
    storeId: string,
    b: { path: string; content: string },
    actor: MemoryActor,
  ): Promise<{ id: string; content_sha256: string }>;
  updateMemory(
    tenant: string,
    storeId: string,
    id: string,
    b: { content: string; content_sha256: string },
    actor: MemoryActor,
  ): Promise<{ id: string; content_sha256: string }>;
  deleteMemory(
    tenant: string,
    storeId: string,
    id: string,
    opts: { expected_content_sha256: string },
    actor: MemoryActor,
  ): Promise<unknown>;
  getMemoryByPath(
    tenant: string,
    storeId: string,
    path: string,
  ): Promise<{ id: string; content: string | null; content_sha256: string } | null>;
}

type NotWrittenReason = 'read_only' | 'invalid' | 'too_large' | 'binary' | 'unreadable';
type Manifest = MemoryManifest & { unsynced?: Record<string, string> };
type Read = { content: string; sha: string } | { reason: NotWrittenReason; message: string };

const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

/**
 * Regular files under `dir` (absolute paths); null when the directory cannot be listed or its
 * listing is over 4 MiB (the host reads the answer on its event loop: a tenant's file names
 * bound what it must parse, sandbox/answerLimits.ts).
 */
async function listFiles(api: SandboxAgentApi, dir: string): Promise<string[] | null> {
  const r = await api.exec({
    command: `find ${quote(dir)} -type f -print0`,
    timeoutMs: 60_000,
    maxOutputBytes: 4 * 1024 * 1024,
  });
  if (r.exitCode !== 0 || r.truncated) return null;
  return r.stdout.split('\0').filter(Boolean);
}

async function readOne(api: SandboxAgentApi, file: string): Promise<Read> {
  try {
    const { content } = await api.readFile(file);
    return { content, sha: contentSha256(content) };
  } catch (err) {
    const kind = err instanceof SandboxAgentError ? err.kind : '';
    const reason =
      kind === 'binary_file' ? 'binary' : kind === 'too_large' ? 'too_large' : 'unreadable';
    return { reason, message: (err as Error).message };
  }
}

async function readManifest(api: SandboxAgentApi, storeId: string): Promise<Manifest | null> {
  try {
    const m = JSON.parse((await api.readFile(manifestPath(storeId))).content) as Manifest;
    return m && typeof m.files === 'object' && m.memory_store_id === storeId ? m : null;
  } catch {
    return null;
  }
}

/** One store's write-back; returns its warnings. */
async function writeBackStore(
  w: MemoryWriter,
  api: SandboxAgentApi,
  tenant: string,
  sessionId: string,
  r: SessionMemoryResource,
  now: () => number,
): Promise<EventDraft[]> {
  const warnings: EventDraft[] = [];
  const storeId = r.memory_store_id;
  const manifest = await readManifest(api, storeId);
  if (!manifest || manifest.mount_path !== r.mount_path) return warnings; // not mounted here
  const mount = r.mount_path;
  const unsynced = (manifest.unsynced ??= {});
  const notWritten = (path: string, reason: NotWrittenReason, message: string, mark: string) => {
    if (unsynced[path] === mark) return;
    unsynced[path] = mark;
    warnings.push({
      type: 'session.warning',
      payload: { warning: 'memory_not_written', message, memory_store_id: storeId, path, reason },
    });
  };
  const files = await listFiles(api, mount);
  if (!files) {
    notWritten('/', 'unreadable', `${mount} could not be listed; nothing was written back`, '-');
    await api.writeFile(manifestPath(storeId), JSON.stringify(manifest));
    return warnings;
  }
  const seen = new Map<string, Read>();
  for (const f of files) {
    if (!f.startsWith(`${mount}/`)) continue;
    seen.set(f.slice(mount.length), await readOne(api, f));
  }
  const actor: MemoryActor = { type: 'session_actor', session_id: sessionId };
  const base = manifest.files;
  /** What was mounted before this write-back (conflict copies it adds are not deletions). */
  const mounted = Object.entries(base);
  const conflict = async (
    path: string,
    agent: { content: string; sha: string } | null,
    mountedSha: string | null,
  ) => {
    const current = await w.getMemoryByPath(tenant, storeId, path).catch(() => null);
    let saved: string | null = null;
    if (agent) {
      for (let n = 1; n <= 5 && !saved; n++) {
        const at = `${path}.conflict-${stamp(now())}${n > 1 ? `-${n}` : ''}`;
        try {
          const m = await w.createMemory(
            tenant,
            storeId,
            { path: at, content: agent.content },
            actor,
          );
          await api.writeFile(`${mount}${at}`, agent.content);
          base[at] = { id: m.id, sha256: m.content_sha256 };
          saved = at;
        } catch (err) {
          if (!(err instanceof ApiError) || err.status !== 409) break;
        }
      }
    }
    if (current) {
      await api.writeFile(`${mount}${path}`, current.content ?? '');
      base[path] = { id: current.id, sha256: current.content_sha256 };
    } else {
      await api.exec({ command: `rm -f -- ${quote(`${mount}${path}`)}`, timeoutMs: 30_000 });
      delete base[path];
    }
    const what = agent
      ? saved
        ? `the session's content was saved as ${saved}`
        : `the session's content could not be saved as a memory and stays only in the sandbox`
      : 'the memory was kept';
    warnings.push({
      type: 'session.warning',
      payload: {
        warning: 'memory_conflict',
        message: `memory ${path} in ${storeId} changed while the session had it mounted; ${what}; ${mount}${path} now has the store's current content`,
        memory_store_id: storeId,
        path,
        mounted_sha256: mountedSha,
        current_sha256: current?.content_sha256 ?? null,
        agent_sha256: agent?.sha ?? null,
        saved_path: saved,
      },
    });
  };
  const failed = (path: string, err: unknown, mark: string) => {
    if (!(err instanceof ApiError) || err.status >= 500) throw err;
    const field = (err.details?.field as string | undefined) ?? '';
    notWritten(path, field === 'content' ? 'too_large' : 'invalid', err.message, mark);
  };
  for (const [path, read] of seen) {
    const was = base[path];
    if ('reason' in read) {
      notWritten(path, read.reason, read.message, `!${read.reason}`);
      continue;
    }
    if (was?.sha256 === read.sha) continue;
    if (r.access === 'read_only') {
      notWritten(
        path,
        'read_only',
        `${storeId} is mounted read_only: ${path} was not written back`,
        read.sha,
      );
      continue;
    }
    try {
      const m = was
        ? await w.updateMemory(
            tenant,
            storeId,
            was.id,
            { content: read.content, content_sha256: was.sha256 },
            actor,
          )
        : await w.createMemory(tenant, storeId, { path, content: read.content }, actor);
      base[path] = { id: m.id, sha256: m.content_sha256 };
      delete unsynced[path];
    } catch (err) {
      if (err instanceof ApiError && (err.status === 409 || (was && err.status === 404)))
        await conflict(path, read, was?.sha256 ?? null);
      else failed(path, err, read.sha);
    }
  }
  for (const [path, was] of mounted) {
    if (seen.has(path)) continue;
    if (r.access === 'read_only') {
      notWritten(
        path,
        'read_only',
        `${storeId} is mounted read_only: deleting ${path} was not written back`,
        'deleted',
      );
      continue;
    }
    try {
      await w.deleteMemory(tenant, storeId, was.id, { expected_content_sha256: was.sha256 }, actor);
      delete base[path];
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) delete base[path];
      else if (err instanceof ApiError && err.status === 409)
        await conflict(path, null, was.sha256);
      else failed(path, err, 'deleted');
    }
  }
  for (const p of Object.keys(unsynced)) if (!seen.has(p) && !base[p]) delete unsynced[p];
  await api.writeFile(manifestPath(storeId), JSON.stringify(manifest));
  return warnings;
}

/** Every mounted store's write-back, in resource order; returns the warnings to append. */
export async function memoryWriteBack(
  w: MemoryWriter,
  api: SandboxAgentApi,
  tenant: string,
  sessionId: string,
  resources: SessionMemoryResource[],
  now: () => number = Date.now,
): Promise<EventDraft[]> {
  const out: EventDraft[] = [];
  for (const r of resources) out.push(...(await writeBackStore(w, api, tenant, sessionId, r, now)));
  return out;
}
