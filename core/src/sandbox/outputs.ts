/**
 * Session outputs sync: files under /mnt/session/outputs in a sandbox are streamed (tar.gz in
 * chunks from the agent → gunzip → tar-stream → the object store's putStream) to
 * `outputs/<tenant>/<session>/<name>`. Nothing of the archive, and no whole file, is held in
 * the server's memory.
 *
 * Guarantees (tested in core/test/sandbox.outputs.test.ts and test/e2e/sandbox/sandbox-tools.test.ts):
 * - a file over `maxFileBytes` is never stored: the agent leaves it out by its size before
 *   sending anything (a sparse 1 GiB file costs nothing), and the server, which does not trust
 *   the sandbox, skips any entry whose header says more and cuts any stream that goes past it;
 * - the outputs of a session together stay within `maxSessionBytes`: a file that would take the
 *   total over it is skipped (the files already stored stay);
 * - only single-segment names are outputs (checkFilename: no `/`, `\`, control characters,
 *   at most 255 bytes); anything else, and anything that is not a regular file, is skipped;
 * - every skipped file is reported once (again only if it changes) with its reason, for the
 *   turn's `session.warning`; one bad file never stops the others;
 * - an unchanged file (same size and mtime, recorded when the mtime was already in the past) is
 *   not sent again by the agent, nor rewritten (the server checks too).
 */
import type { Logger } from '../log.js';
import { checkFilename } from '../files/files.js';
import { InvalidObjectKeyError } from '../objects/keys.js';
import { ObjectTooLargeError, type ObjectStore } from '../objects/port.js';
import type { OutputSkipReason, OutputSyncReport, SandboxAgentApi } from './port.js';
import { readTarGz, type ArchiveSkipReason } from './archive.js';
import { SandboxAgentError } from './protocol.js';

export const MIB = 1024 * 1024;
/** Per-file default: large enough for real artefacts (reports, images, small datasets). */
export const DEFAULT_OUTPUT_MAX_FILE_BYTES = 100 * MIB;
/** Per-session default: a quarter of the smallest sandbox's 4 GB disk. */
export const DEFAULT_OUTPUT_MAX_SESSION_BYTES = 1024 * MIB;
/** Skipped files reported per sync; the rest are only counted in the log. */
export const MAX_SKIPS_REPORTED = 50;

export interface OutputQuotas {
  maxFileBytes: number;
  maxSessionBytes: number;
}

/** What a session's syncs remember between runs (kept by the sandbox manager per session). */
export interface OutputSyncMemory {
  /** name → `size:mtime` of the stored version, and whether that mtime was settled (in the past). */
  stored: Map<string, { signature: string; settled: boolean }>;
  /** name → `reason:signature` of the last reported skip. */
  skipped: Map<string, string>;
}

export const newOutputSyncMemory = (): OutputSyncMemory => ({
  stored: new Map(),
  skipped: new Map(),
});

export interface OutputSyncDeps {
  api: SandboxAgentApi;
  objects: ObjectStore;
  /** The sandbox directory synced (/mnt/session/outputs). */
  dir: string;
  /** The session's object key prefix, ending in `/`. */
  prefix: string;
  quotas: OutputQuotas;
  memory: OutputSyncMemory;
  log: Logger;
  sessionId: string;
  now?: () => number;
}

const printable = (name: string) => JSON.stringify(name).slice(1, -1).slice(0, 300);

/** Why `name` cannot be an output, or null. */
function outputNameProblem(name: string): string | null {
  try {
    checkFilename(name, 'filename');
    return null;
  } catch (err) {
    return `the name ${(err as Error).message.replace(/^filename:?\s*/, '')} (outputs are files directly in the outputs directory)`;
  }
}

const REASONS: Record<ArchiveSkipReason, OutputSkipReason> = {
  file_too_large: 'file_too_large',
  invalid_name: 'invalid_name',
  not_a_regular_file: 'not_a_regular_file',
};

export async function syncSessionOutputs(d: OutputSyncDeps): Promise<OutputSyncReport> {
  const { quotas, memory, objects, prefix } = d;
  const now = d.now ?? Date.now;
  const report: OutputSyncReport = { stored: [], skipped: [] };
  let unreported = 0;
  const skip = (name: string, reason: OutputSkipReason, message: string, signature: string) => {
    const mark = `${reason}:${signature}`;
    if (memory.skipped.get(name) === mark) return;
    memory.skipped.set(name, mark);
    if (report.skipped.length >= MAX_SKIPS_REPORTED) {
      unreported++;
      return;
    }
    report.skipped.push({ name, reason, message });
    d.log.warn('output file skipped', { sessionId: d.sessionId, name: printable(name), reason });
  };

  // what the session's stored outputs weigh now, name by name
  const sizes = new Map<string, number>();
  let used = 0;
  for (const o of await objects.list(prefix)) {
    sizes.set(o.key.slice(prefix.length), o.size);
    used += o.size;
  }

  const startedSec = Math.floor(now() / 1000);
  let archive;
  try {
    // settled versions the store has already are not sent again
    const unchanged: Record<string, string> = {};
    for (const [name, v] of memory.stored)
      if (v.settled && sizes.has(name)) unchanged[name] = v.signature;
    archive = await d.api.archiveStream(d.dir, { maxFileBytes: quotas.maxFileBytes, unchanged });
  } catch (err) {
    if (err instanceof SandboxAgentError && err.kind === 'not_found') return report;
    throw err;
  }
  for (const s of archive.skipped) {
    const name = typeof s?.name === 'string' ? s.name : '';
    const size = Number(s?.size) || 0;
    skip(
      name,
      'file_too_large',
      `output '${printable(name)}' skipped: ${size} bytes is over the ${quotas.maxFileBytes}-byte limit per file`,
      String(size),
    );
  }

  await readTarGz(
    archive.data,
    {
      maxFileBytes: quotas.maxFileBytes,
      // everything in the directory travels on each sync: room for the quota twice, plus slack
      maxTotalBytes: 2 * quotas.maxSessionBytes + quotas.maxFileBytes + 64 * MIB,
      checkName: outputNameProblem,
    },
    {
      skip: (name, reason, message) => skip(name, REASONS[reason], message, 'entry'),
      file: async (f) => {
        const mtimeSec = f.mtime;
        const signature = `${f.size}:${mtimeSec}`;
        const prev = memory.stored.get(f.name);
        if (prev && prev.settled && prev.signature === signature && sizes.has(f.name)) return;
        const old = sizes.get(f.name) ?? 0;
        if (used - old + f.size > quotas.maxSessionBytes) {
          skip(
            f.name,
            'session_quota_exceeded',
            `output '${printable(f.name)}' skipped: storing its ${f.size} bytes would take the session's outputs over the ${quotas.maxSessionBytes}-byte limit`,
            signature,
          );
          return;
        }
        try {
          const { size } = await objects.putStream(`${prefix}${f.name}`, f.data, {
            maxBytes: Math.min(quotas.maxFileBytes, f.size),
          });
          used += size - old;
          sizes.set(f.name, size);
        } catch (err) {
          if (err instanceof InvalidObjectKeyError) {
            skip(
              f.name,
              'invalid_name',
              `output '${printable(f.name)}' skipped: ${err.message}`,
              signature,
            );
            return;
          }
          if (err instanceof ObjectTooLargeError) {
            skip(
              f.name,
              'file_too_large',
              `output '${printable(f.name)}' skipped: longer than its declared ${f.size} bytes`,
              signature,
            );
            return;
          }
          throw err;
        }
        // an mtime in the current second may change again within it: not trusted for "unchanged"
        memory.stored.set(f.name, { signature, settled: mtimeSec < startedSec });
        memory.skipped.delete(f.name);
        report.stored.push(f.name);
      },
    },
  );
  if (unreported)
    d.log.warn('more output files skipped than reported', { sessionId: d.sessionId, unreported });
  return report;
}
