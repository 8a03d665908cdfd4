import type { Readable } from 'node:stream';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { ObjectTooLargeError, type ObjectStore } from '../objects/port.js';
import { nowIso } from '../util.js';
import { SANDBOX_PATHS } from '../sandbox/shared.js';
import type { Collections } from '../store/collections.js';
import type { FileDoc } from './records.js';
import { pageById, type Page } from '../api/pagination.js';
import { cascadeSessionDelete } from '../sessions/cascade.js';

export const FILE_ID_PREFIX = 'file_';
/** Default upload cap (32 MiB, the gateway's JSON body limit too). */
export const DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024;
/** Where uploaded files appear inside a session's sandbox: `<root>/<file id>/<filename>`. */
export const SANDBOX_FILES_ROOT = '/home/user/files';
/** The sandbox directory whose files are durable session outputs (defined once, in the sandbox layout). */
export const SANDBOX_OUTPUTS_DIR = SANDBOX_PATHS.outputs;
const MAX_NAME_BYTES = 255;
const EXPIRES_MIN = 3600;
const EXPIRES_MAX = 7_776_000;

export const fileObjectKey = (tenant: string, id: string) => `files/${tenant}/${id}`;

/**
 * An id as one object-key segment: URI-encoded, so it holds no `/`; empty, `.` and `..` are
 * refused. Every key built from tenant, environment or session ids goes through it.
 */
export function objectKeySegment(id: string, what: string): string {
  const s = encodeURIComponent(id);
  if (!s || s === '.' || s === '..') throw new Error(`invalid ${what} '${id}' for an object key`);
  return s;
}

/** Where a session's outputs live in the object store (the only builder of output keys: the sync and the API use it). */
export const outputsPrefix = (tenant: string, sessionId: string) =>
  `outputs/${objectKeySegment(tenant, 'tenant id')}/${objectKeySegment(sessionId, 'session id')}/`;
/** One output's key; the name is checked as a single path segment (400 naming `filename`). */
export const outputObjectKey = (tenant: string, sessionId: string, filename: string) =>
  `${outputsPrefix(tenant, sessionId)}${checkFilename(filename)}`;

/**
 * A file or output name is one path segment: not empty, not `.` or `..`, no `/` or `\`, no
 * control characters, at most 255 UTF-8 bytes. Anything else is refused naming `field`.
 */
export function checkFilename(name: string, field = 'filename'): string {
  if (typeof name !== 'string' || name.length === 0) throw invalid(field, 'must not be empty');
  if (name === '.' || name === '..') throw invalid(field, 'must not be "." or ".."');
  if (/[/\\]/.test(name)) throw invalid(field, 'must be a single path segment (no "/" or "\\")');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name))
    throw invalid(field, 'must not contain control characters');
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES)
    throw invalid(field, `must be at most ${MAX_NAME_BYTES} bytes`);
  return name;
}

const MIME_BY_EXT: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/plain',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  json: 'application/json',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};
const EXT_BY_MIME: Record<string, string> = Object.fromEntries(
  Object.entries(MIME_BY_EXT)
    .reverse()
    .map(([e, m]) => [m, e]),
);
const GENERIC_MIME = 'application/octet-stream';

/** A MIME type from the name's extension, else application/octet-stream. */
export function mimeFromName(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 && MIME_BY_EXT[name.slice(dot + 1).toLowerCase()]) || GENERIC_MIME;
}

export interface FileMetadata {
  type: 'file';
  id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  created_at: string;
  downloadable: boolean;
  expires_at: string | null;
  scope: { type: 'session'; id: string } | null;
}

export interface FileUpload {
  filename: string | undefined;
  mimeType?: string | undefined;
  data: Uint8Array;
  sessionId?: string | undefined;
  expiresInSeconds?: number | undefined;
}

/** An upload's bytes, stored under a fresh id but not yet a file (commitUpload / discardUpload). */
export interface StagedUpload {
  id: string;
  filename: string;
  mimeType: string;
  size: number;
  objectKey: string;
}

export interface FileListQuery {
  limit?: number;
  page?: string;
  cursor?: string;
  scope_id?: string;
  ids?: string[];
}

/** A file the sandbox manager writes into a session's sandbox before a turn. */
export interface MountedFile {
  path: string;
  data: () => Promise<Uint8Array>;
}

const expired = (d: FileDoc, now = Date.now()) =>
  d.expires_at !== null && Date.parse(d.expires_at) <= now;

export function renderFile(d: FileDoc): FileMetadata {
  return {
    type: 'file',
    id: d._id,
    filename: d.filename,
    mime_type: d.mime_type,
    size_bytes: d.size_bytes,
    created_at: d.created_at,
    downloadable: !expired(d),
    expires_at: d.expires_at,
    scope: d.scope_id ? { type: 'session', id: d.scope_id } : null,
  };
}

async function liveSession(c: Collections, tenant: string, id: string): Promise<boolean> {
  const s = await c.sessions.get(tenant, id);
  return !!s && !s.deleted_at;
}

/**
 * Uploaded files: bytes in the object store under `files/<tenant>/<id>`, metadata in the
 * tenant-scoped `files` collection. A file uploaded with a session id is scoped to that session
 * and is mounted in its sandbox at `/home/user/files/<id>/<filename>`.
 */
export class FileService {
  readonly maxBytes: number;
  constructor(
    private readonly c: Collections,
    private readonly objects: ObjectStore,
    opts: { maxBytes?: number } = {},
  ) {
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  /** The upload's file name: a single segment; absent or empty → `unnamed` (+ extension). */
  static filenameOf(raw: string | undefined, mimeType: string | undefined): string {
    if (raw === undefined || raw === '') {
      const ext = mimeType ? EXT_BY_MIME[mimeType.split(';')[0]!.trim().toLowerCase()] : undefined;
      return ext ? `unnamed.${ext}` : 'unnamed';
    }
    return checkFilename(raw, 'filename');
  }

  async upload(tenant: string, u: FileUpload): Promise<FileMetadata> {
    if (u.data.byteLength > this.maxBytes)
      throw invalid('file', `exceeds the ${this.maxBytes}-byte limit`);
    const staged = await this.stageUpload(
      tenant,
      { filename: u.filename, mimeType: u.mimeType },
      (async function* () {
        yield u.data;
      })(),
    );
    return this.commitUpload(tenant, staged, u);
  }

  /**
   * Streams an upload's bytes into the object store under a fresh id (never whole in memory).
   * Over maxBytes → 400 naming `file`; a bad name → 400 naming `filename`; either way, and if
   * `data` fails, nothing is stored.
   */
  async stageUpload(
    tenant: string,
    meta: { filename: string | undefined; mimeType?: string | undefined },
    data: AsyncIterable<Uint8Array> | Readable,
  ): Promise<StagedUpload> {
    const filename = FileService.filenameOf(meta.filename, meta.mimeType);
    const declared = meta.mimeType?.split(';')[0]?.trim().toLowerCase();
    const mimeType = declared && declared !== GENERIC_MIME ? declared : mimeFromName(filename);
    const id = newId(FILE_ID_PREFIX);
    const objectKey = fileObjectKey(tenant, id);
    try {
      const { size } = await this.objects.putStream(objectKey, data, {
        contentType: mimeType,
        maxBytes: this.maxBytes,
      });
      return { id, filename, mimeType, size, objectKey };
    } catch (err) {
      if (err instanceof ObjectTooLargeError)
        throw invalid('file', `exceeds the ${this.maxBytes}-byte limit`);
      throw err;
    }
  }

  /** Removes a staged upload's bytes (the request failed after they were stored). */
  async discardUpload(staged: StagedUpload): Promise<void> {
    await this.objects.delete(staged.objectKey);
  }

  /** Checks the other fields and makes the staged bytes a file; any refusal discards them. */
  async commitUpload(
    tenant: string,
    staged: StagedUpload,
    u: { sessionId?: string | undefined; expiresInSeconds?: number | undefined },
  ): Promise<FileMetadata> {
    try {
      return await this.insertUpload(tenant, staged, u);
    } catch (err) {
      await this.discardUpload(staged).catch(() => {});
      throw err;
    }
  }

  private async insertUpload(
    tenant: string,
    staged: StagedUpload,
    u: { sessionId?: string | undefined; expiresInSeconds?: number | undefined },
  ): Promise<FileMetadata> {
    let expiresAt: string | null = null;
    if (u.expiresInSeconds !== undefined) {
      const s = u.expiresInSeconds;
      if (!Number.isInteger(s) || s < EXPIRES_MIN || s > EXPIRES_MAX)
        throw invalid(
          'expires_in_seconds',
          `must be an integer from ${EXPIRES_MIN} to ${EXPIRES_MAX}`,
        );
      expiresAt = new Date(Date.now() + s * 1000).toISOString();
    }
    if (u.sessionId !== undefined) {
      if (!u.sessionId) throw invalid('session_id', 'must not be empty');
      if (!(await liveSession(this.c, tenant, u.sessionId)))
        throw invalid('session_id', `session ${u.sessionId} not found`);
    }
    const doc: Omit<FileDoc, 'tenant_id'> = {
      _id: staged.id,
      filename: staged.filename,
      mime_type: staged.mimeType,
      size_bytes: staged.size,
      object_key: staged.objectKey,
      scope_id: u.sessionId ?? null,
      expires_at: expiresAt,
      created_at: nowIso(),
    };
    // Bytes first (staged): the file becomes visible only once its bytes are durable.
    await this.c.files.insert(tenant, doc);
    return renderFile({ ...doc, tenant_id: tenant });
  }

  async getDoc(tenant: string, id: string): Promise<FileDoc> {
    const d = await this.c.files.get(tenant, id);
    if (!d) throw notFound('file', id);
    return d;
  }

  async get(tenant: string, id: string): Promise<FileMetadata> {
    return renderFile(await this.getDoc(tenant, id));
  }

  /** Metadata and bytes; an expired file's bytes are gone (404). */
  async content(tenant: string, id: string): Promise<{ file: FileMetadata; data: Uint8Array }> {
    const d = await this.getDoc(tenant, id);
    if (expired(d))
      throw new ApiError('not_found', `file ${id} has expired`, { error_code: 'file_expired' });
    const data = await this.objects.get(d.object_key);
    if (!data) throw notFound('file content', id);
    return { file: renderFile(d), data };
  }

  /** The same as a stream (downloads): the bytes are never held whole. */
  async contentStream(
    tenant: string,
    id: string,
  ): Promise<{ file: FileMetadata; stream: Readable }> {
    const d = await this.getDoc(tenant, id);
    if (expired(d))
      throw new ApiError('not_found', `file ${id} has expired`, { error_code: 'file_expired' });
    const stream = await this.objects.getStream(d.object_key);
    if (!stream) throw notFound('file content', id);
    return { file: renderFile(d), stream };
  }

  /** Newest first; `page`/`cursor` from `next_page`/`prev_page`; `ids` answers one page. */
  async list(tenant: string, q: FileListQuery): Promise<Page<FileMetadata>> {
    if (q.ids !== undefined) {
      if (q.page !== undefined || q.cursor !== undefined || q.limit !== undefined)
        throw invalid('ids', 'cannot be combined with page or limit');
      const ids = [...new Set(q.ids)];
      if (ids.length > 100) throw invalid('ids', 'at most 100 ids');
      const filter: Record<string, unknown> = { _id: { $in: ids } };
      if (q.scope_id !== undefined) filter.scope_id = q.scope_id;
      const data = (await this.c.files.find(tenant, filter, { sort: { _id: -1 } })).map(renderFile);
      return {
        data,
        has_more: false,
        next_page: null,
        prev_page: null,
        first_id: data[0]?.id ?? null,
        last_id: data[data.length - 1]?.id ?? null,
      };
    }
    const limit = q.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw invalid('limit', 'must be an integer from 1 to 1000');
    const filter: Record<string, unknown> = {};
    if (q.scope_id !== undefined) filter.scope_id = q.scope_id;
    const page = await pageById(this.c.files, tenant, filter, { ...q, limit });
    return { ...page, data: page.data.map(renderFile) };
  }

  /** Metadata first (the file disappears at once), then the bytes. */
  async delete(tenant: string, id: string): Promise<{ id: string; type: 'file_deleted' }> {
    const d = await this.getDoc(tenant, id);
    await this.c.files.deleteOne(tenant, { _id: id });
    await this.objects.delete(d.object_key);
    return { id, type: 'file_deleted' };
  }

  /** A deleted session's files, outputs, spill and snapshots (../sessions/cascade.ts). */
  cascadeSessionDelete(tenant: string, sessionId: string): Promise<{ failedKeys: string[] }> {
    return cascadeSessionDelete(this.c, this.objects, tenant, sessionId);
  }

  /**
   * The files scoped to a session, as the sandbox manager's resources callback wants them:
   * `/home/user/files/<id>/<filename>`, bytes read lazily. Expired files are left out.
   */
  /** Files uploaded for the session, plus the session's file resources at their mount paths. */
  async forSession(
    tenant: string,
    sessionId: string,
    attached: Array<{ file_id: string; mount_path: string }> = [],
  ): Promise<MountedFile[]> {
    const rows = await this.c.files.find(tenant, { scope_id: sessionId }, { sort: { _id: 1 } });
    const mounts = new Map<string, string>();
    for (const d of rows)
      mounts.set(`${d._id}\0${SANDBOX_FILES_ROOT}/${d._id}/${d.filename}`, d._id);
    const byId = new Map(rows.map((d) => [d._id, d]));
    for (const a of attached) {
      if (!byId.has(a.file_id)) {
        const d = await this.c.files.get(tenant, a.file_id);
        // A declared resource that cannot be prepared fails warmup (never skipped).
        if (!d) throw notFound('file', a.file_id);
        byId.set(d._id, d);
      }
      mounts.set(`${a.file_id}\0${a.mount_path}`, a.file_id);
    }
    const now = Date.now();
    return [...mounts.entries()]
      .map(([k, id]) => ({ d: byId.get(id)!, path: k.split('\0')[1]! }))
      .filter(({ d }) => !expired(d, now))
      .map(({ d, path }) => ({
        path,
        data: async () => {
          const b = await this.objects.get(d.object_key);
          if (!b) throw notFound('file content', d._id);
          return b;
        },
      }));
  }
}

export interface SessionOutput {
  type: 'session_output';
  filename: string;
  /** Where the file was written in the sandbox. */
  path: string;
  size_bytes: number;
  mime_type: string;
  updated_at: string;
}

/**
 * Durable session outputs: files the sandbox wrote under `/mnt/session/outputs`, synced by the
 * sandbox manager to `outputs/<tenant>/<session>/<filename>`. Only single-segment names are
 * outputs; anything nested under the prefix is not listed and cannot be read.
 */
export class OutputService {
  constructor(
    private readonly c: Collections,
    private readonly objects: ObjectStore,
  ) {}

  /** 404 unless the session exists for this tenant (and is not deleted). */
  async assertSession(tenant: string, sessionId: string): Promise<void> {
    if (!(await liveSession(this.c, tenant, sessionId))) throw notFound('session', sessionId);
  }

  async list(
    tenant: string,
    sessionId: string,
  ): Promise<{ data: SessionOutput[]; has_more: false }> {
    await this.assertSession(tenant, sessionId);
    const prefix = outputsPrefix(tenant, sessionId);
    const data: SessionOutput[] = [];
    for (const o of await this.objects.list(prefix)) {
      const name = o.key.slice(prefix.length);
      try {
        checkFilename(name);
      } catch {
        continue;
      }
      data.push(renderOutput(name, o.size, o.modifiedAt, o.contentType));
    }
    return { data, has_more: false };
  }

  /** Session first (foreign or unknown → 404), then the name (→ 400 naming `filename`). */
  async read(
    tenant: string,
    sessionId: string,
    filename: string,
  ): Promise<{ output: SessionOutput; data: Uint8Array }> {
    await this.assertSession(tenant, sessionId);
    checkFilename(filename);
    const key = outputObjectKey(tenant, sessionId, filename);
    const [info, data] = await Promise.all([this.objects.head(key), this.objects.get(key)]);
    if (!data) throw notFound('output', filename);
    return {
      output: renderOutput(
        filename,
        data.byteLength,
        info?.modifiedAt ?? nowIso(),
        info?.contentType,
      ),
      data,
    };
  }

  /** The same as a stream (downloads); `size_bytes` is the size when the stream was opened. */
  async readStream(
    tenant: string,
    sessionId: string,
    filename: string,
  ): Promise<{ output: SessionOutput; stream: Readable }> {
    await this.assertSession(tenant, sessionId);
    checkFilename(filename);
    const key = outputObjectKey(tenant, sessionId, filename);
    const info = await this.objects.head(key);
    const stream = info ? await this.objects.getStream(key) : null;
    if (!info || !stream) throw notFound('output', filename);
    return { output: renderOutput(filename, info.size, info.modifiedAt, info.contentType), stream };
  }
}

function renderOutput(
  name: string,
  size: number,
  modifiedAt: string,
  contentType: string | undefined,
): SessionOutput {
  return {
    type: 'session_output',
    filename: name,
    path: `${SANDBOX_OUTPUTS_DIR}/${name}`,
    size_bytes: size,
    mime_type: contentType && contentType !== GENERIC_MIME ? contentType : mimeFromName(name),
    updated_at: modifiedAt,
  };
}
