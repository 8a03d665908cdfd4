import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * A Server-Sent Events response. Every frame is named (`event:`) because the official SDK
 * skips unnamed frames; canonical events carry `id: <seq>` so Last-Event-ID resumes after it.
 * A ping frame every 15 s keeps proxies from closing an idle stream.
 */
/** Open streams, so shutdown can end them instead of waiting on clients forever. */
export const openStreams = new Set<SseWriter>();

export class SseWriter {
  readonly abort = new AbortController();
  private readonly ping: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly req: FastifyRequest,
    private readonly reply: FastifyReply,
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
    const head = id !== undefined ? `id: ${id}\n` : '';
    this.reply.raw.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    openStreams.delete(this);
    clearInterval(this.ping);
    this.abort.abort();
    this.reply.raw.end();
  }
}
