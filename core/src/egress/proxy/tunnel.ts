/**
 * CONNECT tunnelling of the outbound proxy (proxy.ts): `CONNECT host:port` is checked like a
 * request (session policy, then egress policy on every resolved address), then bytes flow
 * untouched both ways to the checked address; refusals answer with a status line and
 * `proxy-status`, and the tunnel is logged as one `outbound.request` entry with its sizes.
 * A host with a credential to inject (interception configured, not an object store) is
 * intercepted instead (./intercept.ts), after the same checks.
 * Tested in core/test/proxy.connect.test.ts, proxy.egress.test.ts and proxy.intercept.test.ts.
 */
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { normalizeHost } from '../policy.js';
import type { ProxyRequestContext } from './policy.js';
import {
  ProxyError,
  connectTimeoutError,
  deniedError,
  upstreamError,
  withTimeout,
  proxyAuthError,
  PROXY_AUTHENTICATE,
  type ProxyCore,
  type ProxyLogEntry,
} from './helpers.js';
import { interceptionFor, serveIntercepted } from './intercept.js';

/** The `connect` handler of the proxy's server: a byte-for-byte tunnel, or an intercepted one. */
export const tunnelConnects =
  (core: ProxyCore) => (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    const { tenantId, sessionId, limits, sockets, emit, decide, resolve } = core;
    const started = performance.now();
    sockets.add(client);
    client.on('error', () => {});
    const entry: ProxyLogEntry = {
      op: 'outbound.request',
      tenant_id: tenantId,
      session_id: sessionId,
      method: 'CONNECT',
      host: '',
      port: 0,
      path: null,
      status: 0,
      allowed: false,
      ms: 0,
      bytes_in: 0,
      bytes_out: 0,
    };
    let upstream: net.Socket | null = null;
    let logged = false;
    const finish = () => {
      if (logged) return;
      logged = true;
      entry.ms = Math.round(performance.now() - started);
      emit(entry);
    };
    client.once('close', () => {
      sockets.delete(client);
      upstream?.destroy();
      finish();
    });
    (client as net.Socket).setTimeout?.(limits.idleTimeoutMs, () => client.destroy());

    const reply = (e: ProxyError) => {
      entry.status = e.status;
      entry.reason = e.reason;
      if (e.status === 403) entry.allowed = false;
      const body = e.message.endsWith('\n') ? e.message : `${e.message}\n`;
      const text = e.status === 403 ? 'Forbidden' : (http.STATUS_CODES[e.status] ?? 'Error');
      client.end(
        `HTTP/1.1 ${e.status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
          `proxy-status: agentfleet; error=${e.proxyStatus}\r\n` +
          (e.status === 407 ? `proxy-authenticate: ${PROXY_AUTHENTICATE}\r\n` : '') +
          `connection: close\r\n\r\n${body}`,
      );
      // Do not wait forever for the client to read the refusal.
      setTimeout(() => client.destroy(), 1000).unref();
    };

    const m =
      /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(req.url ?? '') ??
      /^([A-Za-z0-9._-]+):(\d{1,5})$/.exec(req.url ?? '');
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535)
      return reply(
        new ProxyError(400, 'bad_request', 'http_request_error', 'CONNECT needs host:port'),
      );
    const host = normalizeHost(m[1]);
    entry.host = host;
    entry.port = port;
    const ctx: ProxyRequestContext = {
      tenantId,
      sessionId,
      method: 'CONNECT',
      host,
      port,
      kind: 'connect',
    };
    if (!core.authorized(req)) return reply(proxyAuthError());
    const decision = decide(ctx);
    if (decision.reason) entry.reason = decision.reason;
    if (!decision.allow) return reply(deniedError(decision.reason, host));
    entry.allowed = true;

    // With interception configured and a credential for this host (not an object store), TLS
    // is terminated here and the credential injected (./intercept.ts); otherwise the
    // tunnel stays byte-for-byte and the proxy never sees its plaintext.

    void (async () => {
      const to = connectTimeoutError;
      const dest = await withTimeout(resolve(host, port), limits.connectTimeoutMs, to);
      if (client.destroyed) return;
      const inject = await withTimeout(interceptionFor(core, ctx), limits.connectTimeoutMs, to);
      if (client.destroyed) return;
      if (inject) {
        entry.reason = 'intercepted';
        await serveIntercepted(core, client, head, ctx, dest);
        entry.status = 200;
        return;
      }
      const up = net.connect({ host: dest.address, port, family: dest.family });
      upstream = up;
      await new Promise<void>((resolveConnect, reject) => {
        const timer = setTimeout(() => reject(to()), limits.connectTimeoutMs);
        up.once('connect', () => {
          clearTimeout(timer);
          resolveConnect();
        });
        up.once('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
      if (client.destroyed) {
        up.destroy();
        return;
      }
      entry.status = 200;
      up.on('error', () => client.destroy());
      up.setTimeout(limits.idleTimeoutMs, () => {
        up.destroy();
        client.destroy();
      });
      up.on('close', () => client.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) {
        entry.bytes_out += head.length;
        up.write(head);
      }
      up.on('data', (c: Buffer) => {
        entry.bytes_in += c.length;
      });
      client.on('data', (c: Buffer) => {
        entry.bytes_out += c.length;
      });
      up.pipe(client);
      client.pipe(up);
    })().catch((err) => {
      upstream?.destroy();
      upstream = null;
      if (!client.destroyed) reply(upstreamError(err));
    });
  };
