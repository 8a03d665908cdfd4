/**
 * OpenAPI entries of the session routes (lifecycle, events, streams, log, messages) and of files
 * and session outputs. test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names
 * no route.
 */
import { Type } from '@sinclair/typebox';
import {
  Deleted,
  EventListQuery,
  FileObject,
  FileUploadForm,
  ListPage,
  MessagesBody,
  SendEventsBody,
  Session,
  SessionCreate,
  SessionEvent,
  SessionListQuery,
  SessionOutputList,
  SessionResource,
  SessionResourceAdd,
  SessionResourceListQuery,
  SessionResourceUpdate,
  SessionUpdate,
  SessionThread,
  StreamQuery,
  ThreadListQuery,
} from '@agentfleet/schemas';
import {
  json,
  SSE,
  BYTES,
  SessId,
  FileId,
  ThreadId,
  userMessage,
  type OperationDoc,
} from './operationHelpers.js';

/** A thread's event stream: the SDK's path and the one shaped like the session's. */
const threadStream = (operationId: string, summary: string): OperationDoc => ({
  operationId,
  summary,
  tag: 'threads',
  params: { id: SessId, thread_id: ThreadId },
  query: StreamQuery,
  ok: { description: 'An event stream (never ends on its own).', content: SSE },
});

export const SESSION_AND_FILE_OPERATIONS: Record<string, OperationDoc> = {
  // ---- sessions
  'POST /v1/sessions': {
    operationId: 'createSession',
    summary: 'Create a session',
    tag: 'sessions',
    body: {
      schema: SessionCreate,
      required: true,
      example: { agent: 'agent_01example', environment_id: 'env_01example' },
    },
    ok: { description: 'The session.', content: json(Session) },
  },
  'GET /v1/sessions': {
    operationId: 'listSessions',
    summary: 'List sessions',
    tag: 'sessions',
    query: SessionListQuery,
    ok: { description: 'A page of sessions.', content: json(ListPage(Session)) },
  },
  'GET /v1/sessions/:id': {
    operationId: 'getSession',
    summary: 'Retrieve a session',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The session.', content: json(Session) },
  },
  'POST /v1/sessions/:id': {
    operationId: 'updateSessionPost',
    summary: 'Update a session (the SDK sends POST)',
    tag: 'sessions',
    params: { id: SessId },
    body: { schema: SessionUpdate, example: { title: 'Renamed' } },
    ok: { description: 'The session.', content: json(Session) },
  },
  'PATCH /v1/sessions/:id': {
    operationId: 'updateSession',
    summary: 'Update a session',
    tag: 'sessions',
    params: { id: SessId },
    body: { schema: SessionUpdate, example: { title: 'Renamed' } },
    ok: { description: 'The session.', content: json(Session) },
  },
  'DELETE /v1/sessions/:id': {
    operationId: 'deleteSession',
    summary: 'Delete a session (terminates it)',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'Deleted.', content: json(Deleted('session_deleted')) },
  },
  'GET /v1/sessions/:id/resources': {
    operationId: 'listSessionResources',
    summary: "List the session's resources (creation order)",
    tag: 'sessions',
    params: { id: SessId },
    query: SessionResourceListQuery,
    ok: {
      description: 'A page of resources.',
      content: json(
        Type.Object({
          data: Type.Array(SessionResource),
          next_page: Type.Union([Type.String(), Type.Null()]),
        }),
      ),
    },
  },
  'POST /v1/sessions/:id/resources': {
    operationId: 'addSessionResource',
    summary: 'Add a file resource (written into the sandbox at its next warmup)',
    tag: 'sessions',
    params: { id: SessId },
    body: {
      schema: SessionResourceAdd,
      required: true,
      example: { type: 'file', file_id: 'file_01example' },
    },
    ok: { description: 'The resource.', content: json(SessionResource) },
  },
  'GET /v1/sessions/:id/resources/:resource_id': {
    operationId: 'getSessionResource',
    summary: 'Retrieve a session resource (a repository token is never served)',
    tag: 'sessions',
    params: { id: SessId, resource_id: Type.String({ pattern: '^sres_' }) },
    ok: { description: 'The resource.', content: json(SessionResource) },
  },
  'POST /v1/sessions/:id/resources/:resource_id': {
    operationId: 'updateSessionResource',
    summary: "Rotate a repository resource's authorization token",
    tag: 'sessions',
    params: { id: SessId, resource_id: Type.String({ pattern: '^sres_' }) },
    body: {
      schema: SessionResourceUpdate,
      required: true,
      example: { authorization_token: 'ghs_example' },
    },
    ok: { description: 'The resource.', content: json(SessionResource) },
  },
  'DELETE /v1/sessions/:id/resources/:resource_id': {
    operationId: 'deleteSessionResource',
    summary: 'Remove a resource from the session (a repository token with it)',
    tag: 'sessions',
    params: { id: SessId, resource_id: Type.String({ pattern: '^sres_' }) },
    ok: { description: 'Deleted.', content: json(Deleted('session_resource_deleted')) },
  },
  'POST /v1/sessions/:id/archive': {
    operationId: 'archiveSession',
    summary: 'Archive a session',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The archived session.', content: json(Session) },
  },
  'POST /v1/sessions/:id/cancel': {
    operationId: 'cancelSession',
    summary: "Cancel the session's running turn",
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The session.', content: json(Session) },
  },
  'POST /v1/sessions/:id/events': {
    operationId: 'sendEvents',
    summary: 'Send user events',
    tag: 'events',
    params: { id: SessId },
    body: { schema: SendEventsBody, required: true, example: userMessage },
    ok: {
      status: 202,
      description: 'The appended events.',
      content: json(
        Type.Object({ data: Type.Array(SessionEvent) }, { additionalProperties: false }),
      ),
    },
  },
  'GET /v1/sessions/:id/events': {
    operationId: 'listEvents',
    summary: 'List persisted events (or stream them with `Accept: text/event-stream`)',
    tag: 'events',
    params: { id: SessId },
    query: EventListQuery,
    ok: {
      description: 'A page of events; an event stream when the request accepts text/event-stream.',
      content: { ...json(ListPage(SessionEvent)), ...SSE },
    },
  },
  'GET /v1/sessions/:id/events/stream': {
    operationId: 'streamEvents',
    summary: 'Stream events (SSE; `Last-Event-ID` resumes)',
    tag: 'events',
    params: { id: SessId },
    query: StreamQuery,
    ok: { description: 'An event stream (never ends on its own).', content: SSE },
  },
  // ---- session threads (core/src/threads)
  'GET /v1/sessions/:id/threads': {
    operationId: 'listSessionThreads',
    summary: "List the session's threads: its primary first, then the child threads oldest first",
    tag: 'threads',
    params: { id: SessId },
    query: ThreadListQuery,
    ok: { description: 'A page of threads.', content: json(ListPage(SessionThread)) },
  },
  'GET /v1/sessions/:id/threads/:thread_id': {
    operationId: 'getSessionThread',
    summary: 'Get a session thread',
    tag: 'threads',
    params: { id: SessId, thread_id: ThreadId },
    ok: { description: 'The thread.', content: json(SessionThread) },
  },
  'POST /v1/sessions/:id/threads/:thread_id/archive': {
    operationId: 'archiveSessionThread',
    summary: 'Archive an idle child thread (it takes no more messages)',
    tag: 'threads',
    params: { id: SessId, thread_id: ThreadId },
    ok: { description: 'The archived thread.', content: json(SessionThread) },
  },
  'GET /v1/sessions/:id/threads/:thread_id/events': {
    operationId: 'listSessionThreadEvents',
    summary: "List a thread's events (or stream them with `Accept: text/event-stream`)",
    tag: 'threads',
    params: { id: SessId, thread_id: ThreadId },
    query: EventListQuery,
    ok: {
      description:
        "A page of the thread's events; an event stream when the request accepts text/event-stream.",
      content: { ...json(ListPage(SessionEvent)), ...SSE },
    },
  },
  'GET /v1/sessions/:id/threads/:thread_id/events/stream': threadStream(
    'streamSessionThreadEvents',
    "Stream a thread's events (SSE; `Last-Event-ID` resumes)",
  ),
  'GET /v1/sessions/:id/threads/:thread_id/stream': threadStream(
    'streamSessionThread',
    "Stream a thread's events (SSE; the SDK's path; `Last-Event-ID` resumes)",
  ),
  'GET /v1/sessions/:id/log': {
    operationId: 'sessionLog',
    summary: 'The whole persisted event log',
    tag: 'events',
    params: { id: SessId },
    ok: {
      description: 'Every persisted event, in seq order.',
      content: json(Type.Array(SessionEvent)),
    },
  },
  'POST /v1/sessions/:id/messages': {
    operationId: 'sendMessage',
    summary: 'Send one user message and stream its turn (SSE, ends at idle)',
    tag: 'events',
    params: { id: SessId },
    body: { schema: MessagesBody, required: true, example: { content: 'Hello' } },
    ok: { description: "The turn's event stream, chunks included.", content: SSE },
  },

  // ---- files and outputs
  'POST /v1/files': {
    operationId: 'uploadFile',
    summary: 'Upload a file (multipart/form-data)',
    tag: 'files',
    multipart: FileUploadForm,
    ok: { description: 'The file metadata.', content: json(FileObject) },
  },
  'GET /v1/files': {
    operationId: 'listFiles',
    summary: 'List files (newest first)',
    tag: 'files',
    query: Type.Object(
      {
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        page: Type.Optional(Type.String()),
        cursor: Type.Optional(Type.String()),
        scope_id: Type.Optional(Type.String()),
        ids: Type.Optional(Type.Array(Type.String(), { maxItems: 100 })),
      },
      { additionalProperties: false },
    ),
    ok: { description: 'A page of files.', content: json(ListPage(FileObject)) },
  },
  'GET /v1/files/:id': {
    operationId: 'getFile',
    summary: 'File metadata (`Accept: application/json`) or its bytes',
    tag: 'files',
    params: { id: FileId },
    ok: {
      description:
        'The metadata as JSON when the request accepts application/json; otherwise the bytes.',
      content: { ...json(FileObject), ...BYTES },
    },
  },
  'GET /v1/files/:id/content': {
    operationId: 'downloadFile',
    summary: "A file's bytes",
    tag: 'files',
    params: { id: FileId },
    ok: { description: 'The bytes, with the content type given at upload.', content: BYTES },
  },
  'DELETE /v1/files/:id': {
    operationId: 'deleteFile',
    summary: 'Delete a file',
    tag: 'files',
    params: { id: FileId },
    ok: { description: 'Deleted.', content: json(Deleted('file_deleted')) },
  },
  'GET /v1/sessions/:id/outputs': {
    operationId: 'listOutputs',
    summary: "List a session's durable outputs",
    tag: 'outputs',
    params: { id: SessId },
    ok: { description: 'Every output.', content: json(SessionOutputList) },
  },
  'GET /v1/sessions/:id/outputs/:filename': {
    operationId: 'downloadOutput',
    summary: "An output's bytes",
    tag: 'outputs',
    params: { id: SessId, filename: Type.String({ minLength: 1 }) },
    ok: { description: 'The bytes.', content: BYTES },
  },
  'GET /v1/sessions/:id/outputs/*': {
    operationId: 'nestedOutputPath',
    summary: 'Nested output paths are refused',
    tag: 'outputs',
    params: {
      id: SessId,
      filename: Type.String({ minLength: 1 }),
      nested_path: Type.String({ minLength: 1 }),
    },
    description:
      'Outputs are single path segments: any nested path answers 400 naming `filename` (404 for an unknown or foreign session).',
    ok: { status: 400, description: 'Always refused.', content: {} },
  },
};
