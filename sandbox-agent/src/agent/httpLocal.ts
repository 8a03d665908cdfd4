/**
 * `httpLocal`: one HTTP request to a port on the sandbox's own loopback, answered whole (the
 * older nested stdio MCP shape: a server in the sandbox that binds 127.0.0.1:port).
 *
 *   httpLocal { port, method, path, headers?, bodyBase64?, timeoutMs? }
 *           → { status, headers, bodyBase64 }
 *
 * Guarantees: the request goes to 127.0.0.1 only (there is no host parameter; one sent anyway
 * is refused unless it is loopback); port is an integer 1–65535; method one of GET, HEAD, POST,
 * PUT, PATCH, DELETE, OPTIONS; path starts with '/'; request and response bodies are each at
 * most MAX_HTTP_LOCAL_BODY_BYTES (a larger response is aborted: `too_large`); a response that
 * does not end within timeoutMs (default 120 s, at most 10 min) is aborted: an endless stream
 * (SSE) is the caller's to avoid. Nothing of the agent's environment (proxy variables) applies:
 * node:http connects directly. Proved by core/test/sandbox-mcp-stdio.test.ts.
 * node:http is loaded on the first call, not with the agent: on Node 24 loading it adds about
 * 15 MB to the RSS of every sandbox's agent process (measured: 60 against 45 MB idle), and most
 * sandboxes never make this call.
 */
import type * as Http from 'node:http';
import { AgentError, MAX_HTTP_LOCAL_BODY_BYTES } from '../protocol.js';
import { num, str, type Params } from './params.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost']);

export async function httpLocalOp(p: Params) {
  const host = str(p, 'host', 'httpLocal', true);
  if (host !== undefined && !LOOPBACK.has(host))
    throw new AgentError('invalid_params', `httpLocal: only 127.0.0.1 is reachable, not ${host}`, {
      argument: 'host',
    });
  const port = num(p, 'port', 'httpLocal', 0, 1, 65535);
  if (!port || !Number.isInteger(p.port))
    throw new AgentError('invalid_params', "httpLocal: 'port' must be an integer 1-65535", {
      argument: 'port',
    });
  const method = str(p, 'method', 'httpLocal').toUpperCase();
  if (!METHODS.has(method))
    throw new AgentError('invalid_params', `httpLocal: method ${method} is not supported`, {
      argument: 'method',
    });
  const path = str(p, 'path', 'httpLocal');
  if (!path.startsWith('/') || /[\s\0]/.test(path))
    throw new AgentError(
      'invalid_params',
      "httpLocal: 'path' must start with '/' and hold no spaces",
      {
        argument: 'path',
      },
    );
  const timeoutMs = num(p, 'timeoutMs', 'httpLocal', 120_000, 1, 600_000);
  const b64 = str(p, 'bodyBase64', 'httpLocal', true);
  if (b64 !== undefined && b64.length > Math.ceil(MAX_HTTP_LOCAL_BODY_BYTES / 3) * 4)
    throw new AgentError(
      'too_large',
      `httpLocal: the request body exceeds ${MAX_HTTP_LOCAL_BODY_BYTES} bytes`,
      {
        argument: 'bodyBase64',
      },
    );
  const body = b64 ? Buffer.from(b64, 'base64') : undefined;
  if (body && body.length > MAX_HTTP_LOCAL_BODY_BYTES)
    throw new AgentError(
      'too_large',
      `httpLocal: the request body exceeds ${MAX_HTTP_LOCAL_BODY_BYTES} bytes`,
      { argument: 'bodyBase64' },
    );
  const headers: Record<string, string> = {};
  if (p.headers !== undefined && p.headers !== null) {
    if (typeof p.headers !== 'object' || Array.isArray(p.headers))
      throw new AgentError('invalid_params', "httpLocal: 'headers' must be an object of strings", {
        argument: 'headers',
      });
    for (const [k, v] of Object.entries(p.headers as Params)) {
      if (typeof v !== 'string')
        throw new AgentError('invalid_params', `httpLocal: headers.${k} must be a string`, {
          argument: `headers.${k}`,
        });
      const lk = k.toLowerCase();
      if (
        lk === 'host' ||
        lk === 'content-length' ||
        lk === 'transfer-encoding' ||
        lk === 'connection'
      )
        continue; // set by node:http for this request
      headers[k] = v;
    }
  }
  const http = await import('node:http');
  return new Promise((resolve, reject) => {
    let req: Http.ClientRequest;
    try {
      req = http.request({
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        agent: false,
      });
    } catch (err) {
      // invalid header names or values (node:http validates them)
      return reject(
        new AgentError('invalid_params', `httpLocal: ${(err as Error).message}`, {
          argument: 'headers',
        }),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const fail = (err: unknown) => {
      clearTimeout(timer);
      if (err instanceof AgentError) return reject(err);
      const e = err as NodeJS.ErrnoException;
      reject(
        new AgentError('io', `httpLocal: 127.0.0.1:${port}${path}: ${e.code ?? e.message}`, {
          argument: 'port',
          ...(e.code ? { errno: e.code } : {}),
        }),
      );
    };
    timer = setTimeout(() => {
      fail(
        new AgentError(
          'io',
          `httpLocal: 127.0.0.1:${port}${path}: no complete answer within ${timeoutMs} ms`,
          {
            argument: 'timeoutMs',
          },
        ),
      );
      req.destroy();
    }, timeoutMs);
    req.on('error', fail);
    req.once('response', (res) => {
      const parts: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_HTTP_LOCAL_BODY_BYTES) {
          fail(
            new AgentError(
              'too_large',
              `httpLocal: the response exceeds ${MAX_HTTP_LOCAL_BODY_BYTES} bytes`,
              {
                argument: 'port',
              },
            ),
          );
          req.destroy();
          return;
        }
        parts.push(c);
      });
      res.on('error', fail);
      res.once('end', () => {
        clearTimeout(timer);
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers))
          if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
        resolve({
          status: res.statusCode ?? 502,
          headers: out,
          bodyBase64: Buffer.concat(parts, size).toString('base64'),
        });
      });
    });
    req.end(body);
  });
}
