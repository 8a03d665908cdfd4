import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { finished } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  invalid,
  type FileListQuery,
  type FileService,
  type OutputService,
  type StagedUpload,
} from '@agentfleet/core';
import { tenantOf } from '../http.js';

/** The services these routes need. */
export interface FileServices {
  files: FileService;
  outputs: OutputService;
}

/**
 * `GET /v1/files/:id` serves two clients: the SDK's `retrieveMetadata` (JSON metadata; it sends
 * `Accept: application/json`) and the spec's download (the bytes). JSON when the Accept header
 * names `application/json` with a non-zero q; the bytes otherwise (no Accept, `*∕*`, anything else).
 */
export function acceptsJson(accept: string | string[] | undefined): boolean {
  const value = Array.isArray(accept) ? accept.join(',') : accept;
  if (!value) return false;
  return value.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'application/json') return false;
    const q = params.find((x) => x.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
function disposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** Streams a download (files and outputs are never read whole into memory). */
function sendStream(
  reply: FastifyReply,
  stream: Readable,
  mime: string,
  filename: string,
  size: number | null,
) {
  reply
    .header('content-type', mime)
    .header('content-disposition', disposition(filename))
    .header('x-content-type-options', 'nosniff');
  if (size !== null) reply.header('content-length', size);
  return reply.send(stream);
}

const LIST_KEYS = new Set(['limit', 'page', 'cursor', 'scope_id', 'ids']);
function listQuery(req: FastifyRequest): FileListQuery {
  const q = { ...(req.query as Record<string, unknown>) };
  for (const k of Object.keys(q))
    if (!LIST_KEYS.has(k)) throw invalid(k, 'is not a known query parameter');
  const one = (k: string): string | undefined => {
    const v = q[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw invalid(k, 'must be given once');
    return v;
  };
  const out: FileListQuery = {};
  const limit = one('limit');
  if (limit !== undefined) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > 1000)
      throw invalid('limit', 'must be an integer from 1 to 1000');
    out.limit = n;
  }
  const page = one('page');
  if (page !== undefined) out.page = page;
  const cursor = one('cursor');
  if (cursor !== undefined) out.cursor = cursor;
  const scope = one('scope_id');
  if (scope !== undefined) out.scope_id = scope;
  if (q.ids !== undefined) out.ids = ([] as unknown[]).concat(q.ids).map(String);
  return out;
}

const UPLOAD_FIELDS = new Set(['file', 'session_id', 'expires_in_seconds']);

/**
 * A multipart file stream that fails once busboy cut it at the size limit (`truncated`), so the
 * streamed put stores nothing; busboy's limit is the cap itself, so it never buffers past it.
 */
async function* cappedAt(
  file: Readable & { truncated?: boolean },
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of file) yield chunk as Buffer;
  if (file.truncated) throw invalid('file', `exceeds the ${maxBytes}-byte limit`);
}

/**
 * Files (`/v1/files`, the SDK's `beta.files`) and session outputs (`/v1/sessions/:id/outputs`,
 * an extension: beta header required).
 */
export function fileRoutes(app: FastifyInstance, s: FileServices): void {
  // Multipart only here: the rest of the API stays JSON.
  app.register(async (scope) => {
    await scope.register(multipart, {
      // Keep the client's name as sent so a path is refused, not silently cut to its basename.
      preservePath: true,
      // An oversize file is cut at the cap and the rest drained; the handler answers 400.
      throwFileSizeLimit: false,
      limits: { fileSize: s.files.maxBytes, fieldSize: 4096, fields: 16, parts: 32 },
      // A `file` part without a filename is still the file (named `unnamed`).
      isPartAFile: (
        field: string | undefined,
        _type: string | undefined,
        filename: string | undefined,
      ) => field === 'file' || filename !== undefined,
    });
    scope.post('/v1/files', async (req) => {
      if (!req.isMultipart()) throw invalid('file', 'send multipart/form-data with a "file" part');
      const tenant = tenantOf(req);
      const unknown: string[] = [];
      const tooLong: string[] = [];
      let fileParts = 0;
      const fields = new Map<string, string>();
      // The first `file` part streams into the object store as it arrives (never whole in
      // memory); its refusal (size, name) is kept until every part was read.
      let staged: StagedUpload | null = null;
      let fileError: unknown = null;
      try {
        // Every part is read to the end (extra file parts drained) so the client always gets
        // the 400 rather than a reset connection.
        for await (const part of req.parts()) {
          if (!UPLOAD_FIELDS.has(part.fieldname)) unknown.push(part.fieldname);
          if (part.type === 'file') {
            if (part.fieldname === 'file' && fileParts++ === 0 && !fileError) {
              try {
                staged = await s.files.stageUpload(
                  tenant,
                  { filename: part.filename, mimeType: part.mimetype },
                  cappedAt(part.file, s.files.maxBytes),
                );
              } catch (err) {
                fileError = err;
              }
            }
            part.file.resume();
            if (!part.file.readableEnded) await finished(part.file).catch(() => {});
          } else {
            if (part.valueTruncated) tooLong.push(part.fieldname);
            fields.set(part.fieldname, String(part.value));
          }
        }
        if (unknown.length)
          throw invalid(
            unknown[0]!,
            'is not a known field (expected file, session_id, expires_in_seconds)',
          );
        if (tooLong.length) throw invalid(tooLong[0]!, 'is too long');
        if (fileParts === 0) throw invalid('file', 'a "file" part is required');
        if (fileParts > 1) throw invalid('file', 'exactly one "file" part is allowed');
        if (fileError) throw fileError;
        const expires = fields.get('expires_in_seconds');
        if (expires !== undefined && !/^\d+$/.test(expires.trim()))
          throw invalid('expires_in_seconds', 'must be an integer');
        const done = staged!;
        staged = null; // commitUpload discards the bytes itself when it refuses
        return await s.files.commitUpload(tenant, done, {
          sessionId: fields.get('session_id'),
          expiresInSeconds: expires === undefined ? undefined : Number(expires),
        });
      } finally {
        if (staged) await s.files.discardUpload(staged).catch(() => {});
      }
    });
  });

  app.get('/v1/files', async (req) => s.files.list(tenantOf(req), listQuery(req)));
  app.get<{ Params: { id: string } }>('/v1/files/:id', async (req, reply) => {
    reply.header('vary', 'Accept');
    if (acceptsJson(req.headers.accept)) return s.files.get(tenantOf(req), req.params.id);
    const { file, stream } = await s.files.contentStream(tenantOf(req), req.params.id);
    return sendStream(reply, stream, file.mime_type, file.filename, file.size_bytes);
  });
  app.get<{ Params: { id: string } }>('/v1/files/:id/content', async (req, reply) => {
    const { file, stream } = await s.files.contentStream(tenantOf(req), req.params.id);
    return sendStream(reply, stream, file.mime_type, file.filename, file.size_bytes);
  });
  app.delete<{ Params: { id: string } }>('/v1/files/:id', async (req) =>
    s.files.delete(tenantOf(req), req.params.id),
  );

  const beta = { config: { beta: true } };
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/outputs', beta, async (req) =>
    s.outputs.list(tenantOf(req), req.params.id),
  );
  app.get<{ Params: { id: string; filename: string } }>(
    '/v1/sessions/:id/outputs/:filename',
    beta,
    async (req, reply) => {
      // no content-length: a sync may replace the output while it streams (the open handle keeps
      // the version it started with, whose size the head may not have seen)
      const { output, stream } = await s.outputs.readStream(
        tenantOf(req),
        req.params.id,
        req.params.filename,
      );
      return sendStream(reply, stream, output.mime_type, output.filename, null);
    },
  );
  // Nested paths are never outputs: 404 for a foreign session, else 400 naming `filename`.
  app.get<{ Params: { id: string; '*': string } }>(
    '/v1/sessions/:id/outputs/*',
    beta,
    async (req) => {
      await s.outputs.assertSession(tenantOf(req), req.params.id);
      throw invalid('filename', 'must be a single path segment (no "/" or "\\")');
    },
  );
}
