import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@agentfleet/core';

/**
 * A Server-Sent Events response. Every frame is named (`event:`) because the official SDK
 * skips unnamed frames; canonical events carry `id: <seq>` so Last-Event-ID resumes after it.
 * A ping frame every 15 s keeps proxies from closing an idle stream.
 *
 * Delivery guarantees (test/e2e/events/sse-fanout.test.ts):
 * - Frames reach the socket in the order they were sent; frames sent during one event-loop turn
 *   are coalesced into ONE socket write (one HTTP chunk), flushed on the next `setImmediate`.
 * - Backpressure: once the socket refused data (a write returned false and no 'drain' came yet),
 *   frames keep queueing in memory; when the bytes not yet taken by the client then exceed
 *   `maxBufferedBytes` (SSE_MAX_BUFFERED_BYTES), the stream is a slow consumer and is cut
 *   (socket destroyed, its queue dropped). A slow consumer never slows the publisher or other
 *   streams; its client resumes with Last-Event-ID (canonical events carry their seq as id, so
 *   the resume has no gap and no duplicate). A history replay is paced instead (whenWritable).
 * - close() writes what is still queued, then ends the response.
 */
/**
 * The open event streams of one app per tenant (session SSE, POST …/messages, graphql-sse),
 * at most `cap` (SSE_MAX_STREAMS_PER_TENANT) each: `take` before a stream opens, and call the
 * function it returns (idempotent) when it ends. None left: 429 `rate_limited` naming the cap,
 * before anything is written. Tested in test/e2e/api/connection-limits.test.ts ("stream flood").
 */
export class StreamSlots {
  private readonly open = new Map<string, number>();
  constructor(private readonly cap: number) {}

  take(tenantId: string, reply: FastifyReply): () => void {
    const open = this.open;
    const cap = this.cap;
    const n = open.get(tenantId) ?? 0;
    if (n >= cap) {
      reply.header('retry-after', 1);
      throw new ApiError(
        'rate_limited',
        `too many open event streams for this tenant (limit ${cap}, SSE_MAX_STREAMS_PER_TENANT); close one before opening another`,
      );
    }
    open.set(tenantId, n + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (open.get(tenantId) ?? 1) - 1;
      if (left <= 0) open.delete(tenantId);
      else open.set(tenantId, left);
    };
  }
}

/** Open streams, so shutdown can end them instead of waiting on clients forever. */
export const openStreams = new Set<SseWriter>();

/** The default bound of SseWriter's queued + unsent bytes (config: SSE_MAX_BUFFERED_BYTES). */
export const DEFAULT_SSE_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/** One SSE frame's bytes: `id:` (optional), `event:`, `data:` (JSON), blank line. */
export function encodeFrame(event: string, data: unknown, id?: number): Buffer {
  const head = id !== undefined ? `id: ${id}\n` : '';
  return Buffer.from(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, 'utf8');
}

/**
 * A frame cache keyed by the event object: a live event delivered to many streams (one shared
 * object per publish, core's sharedSubscribe) is encoded once per frame format, not once per
 * subscriber. Entries go away with the event object.
 */
export class FrameCache {
  private readonly frames = new WeakMap<object, Buffer | null>();
  get(item: object, encode: () => Buffer | null): Buffer | null {
    let f = this.frames.get(item);
    if (f === undefined) this.frames.set(item, (f = encode()));
    return f;
  }
}

export class SseWriter {
  readonly abort = new AbortController();
  private readonly ping: NodeJS.Timeout;
  private closed = false;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;

  constructor(
    private readonly req: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly maxBufferedBytes = DEFAULT_SSE_MAX_BUFFERED_BYTES,
  ) {
    reply.hijack();
    const origin = req.headers.origin;
    // The headers set on the reply so far (X-RateLimit-*, request-id) go out with the stream.
    reply.raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string | number | string[]>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'request-id': String(req.id),
      ...(origin ? { 'access-control-allow-origin': origin } : {}),
    });
    reply.raw.flushHeaders?.();
    openStreams.add(this);
    req.raw.on('close', () => this.close());
    this.ping = setInterval(() => this.frame('ping', {}), 15_000);
    this.ping.unref();
  }

  get signal(): globalThis.AbortSignal {
    return this.abort.signal;
  }

  frame(event: string, data: unknown, id?: number): void {
    if (this.closed) return;
    this.send(encodeFrame(event, data, id));
  }

  /** Queues an encoded frame (shared bytes: never modified here). */
  send(frame: Buffer): void {
    if (this.closed) return;
    this.queue.push(frame);
    this.queuedBytes += frame.length;
    const raw = this.reply.raw;
    // Only a socket that refused data (write returned false, no 'drain' yet) makes a slow
    // consumer: a large burst to a client that keeps up is queued and written whole.
    if (raw.writableNeedDrain && raw.writableLength + this.queuedBytes > this.maxBufferedBytes) {
      this.cut();
      return;
    }
    // Written once the code that is queueing frames is done (a microtask): everything queued
    // in one go (a live batch is already one buffer) is one write, and the frames leave in the
    // same event-loop turn they were queued in rather than one turn later.
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.closed) return;
    this.writeQueued();
  };

  private writeQueued(): void {
    if (this.queue.length === 0) return;
    const out =
      this.queue.length === 1 ? this.queue[0]! : Buffer.concat(this.queue, this.queuedBytes);
    this.queue = [];
    this.queuedBytes = 0;
    this.reply.raw.write(out);
  }

  /**
   * Resolves once the socket takes more (at once if it does): writes what is queued first when
   * that is over 64 KiB. A writer that controls its own pace (a history replay) awaits this
   * between batches, so a large replay to a slow client is paced rather than cut.
   */
  whenWritable(): Promise<void> {
    const raw = this.reply.raw;
    if (this.closed) return Promise.resolve();
    if (this.queuedBytes >= 64 * 1024) this.writeQueued();
    if (!raw.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
  }

  /** A slow consumer: drop what is queued and destroy the connection. */
  private cut(): void {
    this.queue = [];
    this.queuedBytes = 0;
    this.stop();
    this.reply.raw.destroy();
  }

  private stop(): void {
    this.closed = true;
    openStreams.delete(this);
    clearInterval(this.ping);
    this.abort.abort();
  }

  close(): void {
    if (this.closed) return;
    if (this.reply.raw.writable) this.writeQueued();
    this.stop();
    this.reply.raw.end();
  }
}
