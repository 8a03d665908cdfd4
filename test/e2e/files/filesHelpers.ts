/**
 * Shared set-up of the files tests (files.test.ts, files-upload-cap.test.ts,
 * files-outputs.test.ts): one in-process platform per test file with a small MAX_FILE_BYTES,
 * SDK and raw HTTP/multipart clients, and a tenant with a session.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import type { FileService, ObjectStore } from '@agentfleet/core';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let url: string;
/** A small upload cap, so the oversize cases stay small. */
export const MAX_FILE_BYTES = 256 * 1024;

export interface FilesPlatform {
  t: TestPlatform;
  url: string;
  objects: ObjectStore;
  files: FileService;
}

/** Starts the platform for the calling test file; the getter gives it once started. */
export function useFilesPlatform(): () => FilesPlatform {
  beforeAll(async () => {
    t = await startPlatform({
      env: { RATE_LIMIT_PER_MINUTE: '100000', MAX_FILE_BYTES: String(MAX_FILE_BYTES) },
    });
    url = t.url;
  });
  afterAll(async () => {
    await t?.close();
  });
  return () => ({ t, url, objects: t.server.platform.objects, files: t.server.platform.files });
}

export const sdk = (apiKey: string) =>
  new Anthropic({ apiKey, baseURL: url, maxRetries: 0, timeout: 20_000 });
export const http = (path: string, key: string, init: RequestInit = {}) => {
  const headers = new Headers(init.headers);
  headers.set('x-api-key', key);
  return fetch(`${url}${path}`, { ...init, headers });
};
export const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });

/** A request whose path goes out exactly as written (fetch would resolve `..` and `\`). */
export function raw(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* bytes */
        }
        resolve({ status: res.statusCode!, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

export interface Part {
  name: string;
  filename?: string;
  type?: string;
  data: string | Buffer;
}
/** A multipart body written by hand, so file names go out exactly as given. */
export function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----agentfleet${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.type) head += `Content-Type: ${p.type}\r\n`;
    chunks.push(
      Buffer.from(`${head}\r\n`),
      Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
export const upload = (key: string, parts: Part[]) => {
  const m = multipart(parts);
  return http('/v1/files', key, {
    method: 'POST',
    body: m.body,
    headers: { 'content-type': m.contentType },
  });
};

export async function tenantWithSession(name: string) {
  const tn = await t.newTenant(name);
  const env = await tn.client.beta.environments.create({ name: `${name}-env` });
  const agent = await tn.client.beta.agents.create({
    name: `${name}-agent`,
    model: 'claude-sonnet-4-5',
  });
  const session = await tn.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  return { ...tn, sessionId: session.id, files: sdk(tn.apiKey) };
}
