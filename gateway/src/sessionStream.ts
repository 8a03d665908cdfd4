import type { FastifyReply, FastifyRequest } from 'fastify';
import { EXTENSION_CANONICAL_TYPES, StreamQuery } from '@agentfleet/schemas';
import { ApiError, type StreamItem } from '@agentfleet/core';
import { queryOf, tenantOf } from './http.js';
import { encodeFrame, FrameCache, SseWriter, type StreamSlots } from './sse.js';
import type { GatewayServices } from './services.js';

/**
 * A session's event stream over SSE (GET /v1/sessions/:id/events/stream, GET …/events with
 * Accept: text/event-stream, and POST …/messages). By default only the spec's event union from
 * now on; `?include=chunks` adds extension events; `?replay=1` replays history;
 * `Last-Event-ID: <seq>` replays only seq > N. The SDK's `event_deltas[]` turns message/thinking
 * chunks into its `event_start`/`event_delta` frames. The stream ends after `session.deleted`.
 *
 * Encode once: core's sharedSubscribe hands every local follower the same array of the same
 * event objects per event-loop turn, so each event's frame is encoded once per format and a
 * whole live batch once per stream mode (at most 8 modes: include × event_deltas); a subscriber
 * only queues the shared bytes, and SseWriter coalesces its frames of one turn into one write.
 * Tests: test/e2e/sessions/sessions-events.test.ts (replay, Last-Event-ID, include, event_deltas, /messages),
 * test/e2e/events/sse-fanout.test.ts (one write per tick in every mode, slow consumer, end on delete),
 * core/test/liveEvents.shared.test.ts (one subscription, shared batches).
 */

type IdReq = FastifyRequest<{ Params: { id: string } }>;

/** What a session stream reads: the session, its event log, the SSE buffer bound. */
export type StreamServices = Pick<GatewayServices, 'sessions' | 'events' | 'config'>;

export interface StreamMode {
  chunks: boolean;
  deltas: Set<string>;
  /** Names the frame format (same key, same frames for the same items). */
  key: string;
}

const streamQuery = queryOf(StreamQuery);

/** Canonical events: `id: <seq>` frames; live-only events: their frame without `ephemeral`. */
const plainFrames = new FrameCache();
/** The SDK preview frame of a live event (null: the event has none). */
const sdkFrames = new FrameCache();
/** A batch's frames in one buffer, per stream mode (a shared live batch: encoded once per mode). */
const batchCaches = new Map<string, FrameCache>();

function batchFrames(batch: readonly StreamItem[], mode: StreamMode): Buffer | null {
  let cache = batchCaches.get(mode.key);
  if (!cache) batchCaches.set(mode.key, (cache = new FrameCache()));
  return cache.get(batch, () => {
    const parts: Buffer[] = [];
    const sink = { send: (b: Buffer) => void parts.push(b) };
    for (const item of batch) writeItem(sink, item, mode);
    return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  });
}

export async function streamSession(
  p: StreamServices,
  streams: StreamSlots,
  req: IdReq,
  reply: FastifyReply,
  /** A thread's log (core/src/threads), checked by the caller; else the session's, checked here. */
  logId?: string,
) {
  const tenant = tenantOf(req);
  const q = streamQuery(req);
  if (!logId) await p.sessions.getDoc(tenant, req.params.id);
  const sid = logId ?? req.params.id;
  const lastId = req.headers['last-event-id'];
  let afterSeq: number | null = null;
  if (lastId !== undefined) {
    const n = Number(lastId);
    if (!Number.isInteger(n) || n < 0)
      throw new ApiError(
        'invalid_request',
        'Last-Event-ID: must be a non-negative integer event seq',
      );
    afterSeq = n;
  } else if (q.replay === '1' || q.replay === 'true') afterSeq = 0;
  const deltas = new Set(q.event_deltas ?? []);
  const mode: StreamMode = {
    chunks: !!q.include,
    deltas,
    key: `${q.include ? 'chunks' : ''}|${[...deltas].sort().join(',')}`,
  };
  // One of the tenant's open streams (sse.ts StreamSlots), given back when this one ends.
  const giveSlot = streams.take(tenant, reply);
  const abort = new AbortController();
  req.raw.once('close', () => abort.abort());
  let sse: SseWriter | null = null;
  // The replay (and the first live batch after it) go at the client's pace; after that, live
  // events never wait for one client (a client that falls behind is cut, see sse.ts).
  let paced = afterSeq !== null;
  let replayOver = false;
  // Headers go out only once the live subscription is in place (onReady).
  const open = () => {
    sse = new SseWriter(req, reply, p.config.sseMaxBufferedBytes);
    sse.signal.addEventListener('abort', () => abort.abort(), { once: true });
  };
  try {
    for await (const batch of p.events.followBatches(tenant, sid, {
      afterSeq,
      includeLive: mode.chunks || mode.deltas.size > 0,
      signal: abort.signal,
      onReady: open,
      onLive: () => (replayOver = true),
    })) {
      if (paced) {
        await sse!.whenWritable();
        if (replayOver) paced = false;
      }
      // Nothing follows a deleted session's last event.
      const end = batch.findIndex((item) => item.type === 'session.deleted');
      if (end < 0) {
        const bytes = batchFrames(batch, mode);
        if (bytes) sse!.send(bytes);
        continue;
      }
      for (const item of batch.slice(0, end + 1)) writeItem(sse!, item, mode);
      return;
    }
  } finally {
    (sse as SseWriter | null)?.close();
    giveSlot();
  }
}

/** Queues the frames `mode` shows for one item (none, one, or a chunk plus its SDK preview). */
export function writeItem(
  sse: Pick<SseWriter, 'send'>,
  item: StreamItem,
  mode: Omit<StreamMode, 'key'>,
): void {
  if ('ephemeral' in item && item.ephemeral) {
    if (mode.chunks)
      sse.send(
        plainFrames.get(item, () => {
          const { ephemeral: _e, ...ev } = item;
          return encodeFrame(ev.type, ev);
        })!,
      );
    if (wantsSdkFrame(item.type, mode.deltas)) {
      const f = sdkFrames.get(item, () => {
        const sdk = toSdkDelta(item, mode.deltas);
        return sdk ? encodeFrame(String(sdk.type), sdk) : null;
      });
      if (f) sse.send(f);
    }
    return;
  }
  const ev = item as { type: string; seq: number };
  if (!mode.chunks && EXTENSION_CANONICAL_TYPES.has(ev.type)) return;
  sse.send(plainFrames.get(ev, () => encodeFrame(ev.type, ev, ev.seq))!);
}

/** Whether an event of this type can have an SDK preview frame under these event_deltas. */
function wantsSdkFrame(type: string, deltas: Set<string>): boolean {
  if (type.startsWith('agent.thinking')) return deltas.has('agent.thinking');
  if (type.startsWith('agent.message')) return deltas.has('agent.message');
  return false;
}

/**
 * The SDK's preview frames (BetaManagedAgentsStartEvent / DeltaEvent): an agent.message preview
 * opens once (its first block) and streams `content_delta` fragments whose `index` is the block's
 * position in the message's content; an agent.thinking preview is start-only: no delta follows,
 * the buffered agent.thinking concludes it. Proven by test/e2e/events/event-deltas.test.ts.
 */
function toSdkDelta(ev: Record<string, any>, deltas: Set<string>): Record<string, unknown> | null {
  if (ev.type === 'agent.thinking_stream_start' && deltas.has('agent.thinking'))
    return { type: 'event_start', event: { id: ev.thinking_id, type: 'agent.thinking' } };
  if (!ev.type.startsWith('agent.message') || !deltas.has('agent.message')) return null;
  const index = typeof ev.index === 'number' ? ev.index : 0;
  if (ev.type === 'agent.message_stream_start' && index === 0)
    return { type: 'event_start', event: { id: ev.message_id, type: 'agent.message' } };
  if (ev.type === 'agent.message_chunk')
    return {
      type: 'event_delta',
      event_id: ev.message_id,
      delta: { type: 'content_delta', content: { type: 'text', text: ev.delta }, index },
    };
  return null;
}
