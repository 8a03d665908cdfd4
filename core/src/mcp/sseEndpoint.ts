/**
 * The MCP proxy's help for the HTTP+SSE transport (the SDK's deprecated `SSEServerTransport`),
 * whose server announces a separate message endpoint in an `endpoint` event. Guarantees:
 * - `resolveForwardPath`: a caller's `path` (path plus query, relative to the server url's
 *   ORIGIN) is forwarded only when it starts with one `/`, holds no backslash, control
 *   character or whitespace, and resolves to the configured url's origin (scheme, host, port);
 *   anything else (another host, `//evil`, `/\evil`, `javascript:`…) is refused (the proxy
 *   answers 400 naming `path`), so nothing reaches another host;
 * - `rewriteEndpointEvents`: in an upstream `text/event-stream` body, each `endpoint` event's
 *   data (a URL relative to the SSE URL, or absolute) that resolves to the upstream's origin is
 *   rewritten to `<endpointBase><path><query>`, the proxy path at which the caller reaches that
 *   upstream path (the SDK client resolves it against the URL it connected to and POSTs there);
 *   an endpoint on another origin is passed unchanged (the SDK client refuses it). Every other
 *   event streams through as it came (line endings normalised to `\n`).
 * Proved by test/e2e/mcp/mcp-proxy-sse.test.ts.
 */

/** The upstream URL a `path` names, or null when it is refused. */
export function resolveForwardPath(path: string, serverUrl: string): URL | null {
  if (typeof path !== 'string' || path.length > 8192) return null;
  if (!path.startsWith('/') || path.startsWith('//')) return null;
  if (/[\\\s\u0000-\u001f\u007f]/.test(path)) return null;
  let out: URL;
  try {
    out = new URL(path, serverUrl);
  } catch {
    return null;
  }
  const base = new URL(serverUrl);
  if (out.protocol !== 'http:' && out.protocol !== 'https:') return null;
  if (out.origin !== base.origin || out.username || out.password) return null;
  return out;
}

/** `body` with its `endpoint` events pointed at `endpointBase` (see the file header). */
export function rewriteEndpointEvents(
  body: ReadableStream<Uint8Array>,
  upstreamUrl: string,
  endpointBase: string,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const origin = new URL(upstreamUrl).origin;
  let pending = '';
  let block: string[] = [];

  const flushBlock = (): string => {
    const lines = block;
    block = [];
    const isEndpoint = lines.some((l) => /^event: ?endpoint$/.test(l));
    if (!isEndpoint) return lines.map((l) => `${l}\n`).join('') + '\n';
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    let target: URL | null = null;
    try {
      target = new URL(data, upstreamUrl);
    } catch {
      target = null;
    }
    if (!target || target.origin !== origin) return lines.map((l) => `${l}\n`).join('') + '\n';
    const kept = lines.filter((l) => !l.startsWith('data:'));
    const rewritten = `${endpointBase}${target.pathname}${target.search}`;
    return kept.map((l) => `${l}\n`).join('') + `data: ${rewritten}\n\n`;
  };

  const take = (text: string, final: boolean): string => {
    pending += text;
    let out = '';
    for (;;) {
      const m = /\r\n|\r|\n/.exec(pending);
      if (!m) break;
      // A trailing \r may be the first half of \r\n split across chunks.
      if (m[0] === '\r' && m.index === pending.length - 1 && !final) break;
      const line = pending.slice(0, m.index);
      pending = pending.slice(m.index + m[0].length);
      if (line === '') out += flushBlock();
      else block.push(line);
    }
    if (final) {
      if (pending) block.push(pending);
      pending = '';
      if (block.length) out += block.map((l) => `${l}\n`).join('');
      block = [];
    }
    return out;
  };

  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const out = take(decoder.decode(chunk, { stream: true }), false);
        if (out) controller.enqueue(encoder.encode(out));
      },
      flush(controller) {
        const out = take(decoder.decode(), true);
        if (out) controller.enqueue(encoder.encode(out));
      },
    }),
  );
}
