/**
 * Send-time checks of input events that the schema cannot express, so a bad request
 * is a 400 naming the field and nothing is appended:
 * - `system.message` (SDK BetaManagedAgentsSystemMessageEventParams): at most one per request,
 *   the last event, right after the `user.message` or `user.custom_tool_result` it accompanies;
 *   otherwise 400 naming `events[i].type`.
 * - image and document blocks whose source is `{type: 'file', file_id}` (in `user.message`
 *   and `user.custom_tool_result` content): the file must exist for this tenant (another
 *   tenant's id is "not found", like a missing one), must not have expired (details.error_code
 *   `file_expired`, the SDK's FileExpiredError code) and must be a kind the model can read
 *   (`fileBlockKind`); otherwise 400 naming `events[i].content[j].source.file_id`.
 * The bytes are not read here: the worker resolves them at request build time
 * (workers/src/turn/fileBlocks.ts) and they are never stored in events.
 * - `user.tool_result` (SDK BetaManagedAgentsUserToolResultEventParams, the ama_worker lane):
 *   only on a session of a `self_hosted` environment (elsewhere a 400 naming `events[i].type`),
 *   and only for an agent.tool_use of this session that awaits the worker: an agent
 *   toolset tool the worker runs (WORKER_TOOLSET_TOOLS), not denied, confirmed `allow` first
 *   if a policy held it, without a result yet and answered once per request; otherwise 400
 *   naming `events[i].tool_use_id` (another session's or tenant's id reads as unknown).
 * Proved by test/e2e/files/file-blocks.test.ts, test/e2e/events/system-message.test.ts and
 * test/e2e/work/self-hosted-lane.test.ts.
 */
import type { InputEvent } from '@agentfleet/schemas';
import { ApiError, invalid } from '../errors.js';
import type { Collections } from '../store/collections.js';
import type { EventDoc } from '../events/records.js';
import type { FileDoc } from '../files/records.js';
import type { SessionDoc } from './records.js';
import { notSupportedYet } from '../api/unsupported.js';

/**
 * The agent toolset tools a self-hosted worker executes (the official workers' default
 * toolset). web_fetch and web_search stay in the control plane (egress policy, no sandbox).
 */
export const WORKER_TOOLSET_TOOLS: ReadonlySet<string> = new Set([
  'bash',
  'read',
  'write',
  'edit',
  'glob',
  'grep',
]);

/** True for a session whose environment is self_hosted: its toolset runs in the worker. */
export const isSelfHostedSession = (s: Pick<SessionDoc, 'environment'>) =>
  s.environment?.kind === 'self_hosted';

/**
 * True when an agent.tool_use of a self_hosted session is executed by the worker and answered
 * by its user.tool_result (a denied call is answered by the platform, never by the worker).
 */
export const awaitsWorker = (
  s: Pick<SessionDoc, 'environment'>,
  use: Pick<EventDoc, 'type' | 'payload'>,
) =>
  isSelfHostedSession(s) &&
  use.type === 'agent.tool_use' &&
  WORKER_TOOLSET_TOOLS.has(String(use.payload.name)) &&
  use.payload.evaluated_permission !== 'deny';

/** Image media types both protocols accept as inline base64. */
export const MODEL_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);
/** Non-`text/*` media types whose bytes are UTF-8 text, sent as a plain-text document. */
const TEXT_DOCUMENT_TYPES: ReadonlySet<string> = new Set([
  'application/json',
  'application/xml',
  'application/yaml',
]);

/**
 * How a file's bytes reach the model for a block type: an image (base64), a PDF document
 * (base64) or a text document (the text); null when the model cannot read that kind.
 */
export function fileBlockKind(
  blockType: 'image' | 'document',
  mimeType: string,
): 'image' | 'pdf' | 'text' | null {
  const mime = mimeType.split(';')[0]!.trim().toLowerCase();
  if (blockType === 'image') return MODEL_IMAGE_TYPES.has(mime) ? 'image' : null;
  if (mime === 'application/pdf') return 'pdf';
  if (mime.startsWith('text/') || TEXT_DOCUMENT_TYPES.has(mime)) return 'text';
  return null;
}

export const fileHasExpired = (d: Pick<FileDoc, 'expires_at'>, now = Date.now()) =>
  d.expires_at !== null && Date.parse(d.expires_at) <= now;

const ACCOMPANIED_BY_SYSTEM_MESSAGE: ReadonlySet<string> = new Set([
  'user.message',
  'user.custom_tool_result',
]);

/** Throws the first problem as a 400 naming its field; resolves when every event is usable. */
export async function checkInputEvents(
  c: Pick<Collections, 'files'>,
  tenant: string,
  events: InputEvent[],
): Promise<void> {
  for (const [i, e] of events.entries()) {
    if (e.type === 'system.message') {
      const prev = events[i - 1]?.type;
      if (i !== events.length - 1 || !prev || !ACCOMPANIED_BY_SYSTEM_MESSAGE.has(prev))
        throw invalid(
          `events[${i}].type`,
          'a system.message must be the last event of the request and immediately follow the ' +
            'user.message or user.custom_tool_result it accompanies (at most one per request)',
        );
      continue;
    }
    if (e.type !== 'user.message' && e.type !== 'user.custom_tool_result') continue;
    for (const [j, b] of (e.content ?? []).entries()) {
      if (b.type !== 'image' && b.type !== 'document') continue;
      if (b.source.type !== 'file') continue;
      await checkFileSource(c, tenant, b.type, b.source.file_id, `events[${i}].content[${j}]`);
    }
  }
}

async function checkFileSource(
  c: Pick<Collections, 'files'>,
  tenant: string,
  blockType: 'image' | 'document',
  fileId: string,
  at: string,
): Promise<void> {
  const field = `${at}.source.file_id`;
  const d = fileId ? await c.files.get(tenant, fileId) : null;
  if (!d) throw invalid(field, `file ${fileId} not found`);
  if (fileHasExpired(d))
    throw new ApiError('invalid_request', `${field}: file ${fileId} has expired`, {
      field,
      error_code: 'file_expired',
    });
  if (!fileBlockKind(blockType, d.mime_type))
    throw invalid(
      field,
      blockType === 'image'
        ? `file ${fileId} is ${d.mime_type}; an image block takes ${[...MODEL_IMAGE_TYPES].join(', ')}`
        : `file ${fileId} is ${d.mime_type}; a document block takes application/pdf or a text file`,
    );
}

/** Throws a 400 naming the field for the first user.tool_result that answers no worker call. */
export async function checkToolResults(
  events: Collections['events'],
  tenant: string,
  s: Pick<SessionDoc, '_id' | 'environment'>,
  input: readonly InputEvent[],
): Promise<void> {
  const answeredHere = new Set<string>();
  for (const [i, e] of input.entries()) {
    if (e.type !== 'user.tool_result') continue;
    if (!isSelfHostedSession(s))
      throw notSupportedYet(
        `events[${i}].type`,
        'user.tool_result on a cloud environment (the platform runs its tools; a worker answers only on self_hosted environments)',
      );
    const field = `events[${i}].tool_use_id`;
    if (answeredHere.has(e.tool_use_id))
      throw invalid(field, `${e.tool_use_id} is answered twice in this request`);
    answeredHere.add(e.tool_use_id);
    const use = await events.findOne(tenant, {
      session_id: s._id,
      _id: e.tool_use_id,
      type: 'agent.tool_use',
    });
    if (!use || !awaitsWorker(s, use))
      throw invalid(
        field,
        `no agent.tool_use ${e.tool_use_id} awaiting a worker result in this session`,
      );
    const answered = await events.findOne(tenant, {
      session_id: s._id,
      type: { $in: ['agent.tool_result', 'user.tool_result'] },
      'payload.tool_use_id': e.tool_use_id,
    });
    if (answered) throw invalid(field, `tool use ${e.tool_use_id} already has a result`);
    if (use.payload.evaluated_permission === 'ask') {
      const allowed = await events.findOne(tenant, {
        session_id: s._id,
        type: 'user.tool_confirmation',
        'payload.tool_use_id': e.tool_use_id,
        'payload.result': 'allow',
      });
      if (!allowed)
        throw invalid(field, `tool use ${e.tool_use_id} awaits its user.tool_confirmation first`);
    }
  }
}
