/**
 * Shared helpers of the served-shape tests (contract-shapes.test.ts): the in-process platform,
 * schema validation of bodies and events (the failure names the field and shows the body), API
 * calls validated against their schema or ErrorBody, and an SSE reader checking the frame contract.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { Type, type TSchema } from '@sinclair/typebox';
import {
  ErrorBody,
  SessionEvent,
  compileBody,
  validateSessionEvent,
  validateStreamFrame,
  type Validator,
} from '@agentfleet/schemas';
import { startPlatform, type TestPlatform } from './harness.js';

let t: TestPlatform;

/** Starts the platform for the calling test file; the returned getter gives it once started. */
export function useContractPlatform(): () => TestPlatform {
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t?.close();
  });
  return () => t;
}

const validators = new Map<TSchema, Validator<unknown>>();
/** Validates `body` against `schema`; the failure names the field and shows the body. */
export function conforms(schema: TSchema, body: unknown, what: string): void {
  let v = validators.get(schema);
  if (!v) validators.set(schema, (v = compileBody(schema)));
  try {
    v(body);
  } catch (err) {
    throw new Error(
      `${what} does not match its schema: ${(err as Error).message}\n${JSON.stringify(body, null, 2)}`,
    );
  }
}

export function conformsEvent(
  ev: unknown,
  what: string,
  validate: (v: unknown) => unknown = validateSessionEvent,
): void {
  try {
    validate(ev);
  } catch (err) {
    throw new Error(
      `${what} does not match its schema: ${(err as Error).message}\n${JSON.stringify(ev, null, 2)}`,
    );
  }
}

/** Calls the API and validates the answer: `schema` for 2xx, ErrorBody for 4xx/5xx. */
export async function call(
  schema: TSchema,
  method: string,
  path: string,
  json?: unknown,
  headers: Record<string, string> = {},
): Promise<any> {
  const res = await t.http(path, { method, json, headers });
  const body = await res.json();
  if (res.status >= 400) {
    conforms(ErrorBody, body, `${method} ${path} error body`);
    throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(body)}`);
  }
  conforms(schema, body, `${method} ${path}`);
  return body;
}

export async function expectError(
  status: number,
  method: string,
  path: string,
  json?: unknown,
  key?: string,
) {
  const res = await t.http(path, { method, json, key });
  expect(res.status).toBe(status);
  const body = await res.json();
  conforms(ErrorBody, body, `${method} ${path} (${status})`);
  return body;
}

export interface Frame {
  event: string;
  data: any;
  id?: string;
}

/** Keeps reading an SSE response in the background; `until` waits for a frame matching `pred`. */
export function collectSse(res: Response) {
  const frames: Frame[] = [];
  const waiter: { wake?: () => void } = {};
  let ended = false;
  const reader = res.body!.getReader();
  const pump = (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const raw = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: Frame = { event: 'message', data: null };
          for (const line of raw.split('\n')) {
            if (line.startsWith('event: ')) f.event = line.slice(7);
            else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
            else if (line.startsWith('id: ')) f.id = line.slice(4);
          }
          if (f.event !== 'ping') frames.push(f);
        }
        waiter.wake?.();
      }
    } catch {
      /* cancelled */
    } finally {
      ended = true;
      waiter.wake?.();
    }
  })();
  return {
    frames,
    async until(
      pred: (f: Frame, i: number) => boolean,
      from = 0,
      timeoutMs = 20_000,
    ): Promise<Frame> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = frames.findIndex((f, i) => i >= from && pred(f, i));
        if (hit >= 0) return frames[hit]!;
        if (ended) throw new Error(`SSE ended; got ${frames.map((f) => f.event).join(',')}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`SSE timeout; got ${frames.map((f) => f.event).join(',')}`);
        await new Promise<void>((r) => {
          waiter.wake = r;
          setTimeout(r, Math.min(left, 250));
        });
      }
    },
    async close() {
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}

/** The frame contract: named by the event's type; persisted events carry `id: <seq>`. */
export function checkFrame(f: Frame, what: string): void {
  expect(f.data.type, what).toBe(f.event);
  if (typeof f.data.seq === 'number') expect(f.id, what).toBe(String(f.data.seq));
  else expect(f.id, what).toBeUndefined();
  conformsEvent(f.data, `${what} frame ${f.event}`, validateStreamFrame);
}

export const MODEL = 'contract-model';
export const userMessage = (text: string) => ({
  events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
});
export const SendAnswer = Type.Object(
  { data: Type.Array(SessionEvent) },
  { additionalProperties: false },
);
