/**
 * What the host accepts from a sandbox agent, per call: the agent runs beside the tenant's
 * commands, so nothing it says is trusted. For every method the largest answer line a correct
 * agent can send is known from the request (`answerLimit`): the client reads no line longer than
 * the largest limit of its pending calls (a small one while none is pending), so a sandbox can
 * never make the host hold or parse more than that; an answer longer than its own call's limit
 * fails that call. `capAnswer` then enforces every size cap on the decoded result: exec output
 * cut at the request's maxOutputBytes (`truncated` set), text and lists at the agent's own caps,
 * binary chunks at theirs; a result of the wrong shape fails the call.
 *
 * Bounds (bytes of one line): exec 2 × 6 × maxOutputBytes (stdout and stderr, each character at
 * most 6 bytes of JSON) + 64 KiB; readFile 2 × MAX_READ_BYTES (text: escapes of tab and newline)
 * + 64 KiB; streamRead 4/3 × STREAM_CHUNK_BYTES + 64 KiB; httpLocal 4/3 ×
 * MAX_HTTP_LOCAL_BODY_BYTES + 64 KiB; glob, grep, list 16 MiB; any other answer, and any line
 * while no call is pending, 64 KiB.
 *
 * Proved by core/test/sandbox.answers.test.ts (a hostile agent in a real sandbox: a 300 MiB
 * line, output over the cap, a line that is not JSON, an answer to no request).
 */
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_GLOB_RESULTS,
  MAX_HTTP_LOCAL_BODY_BYTES,
  MAX_OUTPUT_BYTES_LIMIT,
  MAX_READ_BYTES,
  STREAM_CHUNK_BYTES,
} from '@agentfleet/sandbox-agent';

/** Largest line accepted while no call is pending, and the envelope allowed on every answer. */
export const SMALL_LINE_BYTES = 64 * 1024;
const LIST_BYTES = 16 * 1024 * 1024;
const b64Len = (n: number) => Math.ceil(n / 3) * 4;

const outputCap = (params: Record<string, unknown>) => {
  const m = params.maxOutputBytes;
  return typeof m === 'number' && Number.isFinite(m) && m >= 0
    ? Math.min(Math.floor(m), MAX_OUTPUT_BYTES_LIMIT)
    : DEFAULT_MAX_OUTPUT_BYTES;
};

/** The longest answer line a correct agent sends for this call. */
export function answerLimit(method: string, params: Record<string, unknown>): number {
  switch (method) {
    case 'exec':
      return 12 * outputCap(params) + SMALL_LINE_BYTES;
    case 'readFile':
      return 2 * MAX_READ_BYTES + SMALL_LINE_BYTES;
    case 'streamRead':
      return b64Len(STREAM_CHUNK_BYTES) + SMALL_LINE_BYTES;
    case 'httpLocal':
      return b64Len(MAX_HTTP_LOCAL_BODY_BYTES) + SMALL_LINE_BYTES;
    case 'glob':
    case 'grep':
    case 'list':
    case 'archiveOpen':
      return LIST_BYTES;
    default:
      return SMALL_LINE_BYTES;
  }
}

/** An answer that breaks the protocol's bounds: the call fails with this message. */
export class AnswerRefused extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

function need(ok: boolean, method: string, what: string): void {
  if (!ok) throw new AnswerRefused(`sandbox agent answered ${method} with ${what}`);
}

/**
 * The result with every cap enforced on the host side, or AnswerRefused when its shape is not
 * the method's. Exec output over the call's maxOutputBytes is cut (and marked truncated), as the
 * agent itself would have done.
 */
export function capAnswer(
  method: string,
  params: Record<string, unknown>,
  result: unknown,
): unknown {
  switch (method) {
    case 'exec': {
      need(isObject(result), method, 'no result object');
      const r = result as Record<string, unknown>;
      need(
        typeof r.stdout === 'string' && typeof r.stderr === 'string',
        method,
        'no output strings',
      );
      const max = outputCap(params);
      const stdout = r.stdout as string;
      const stderr = r.stderr as string;
      const over = stdout.length > max || stderr.length > max;
      return {
        exitCode: typeof r.exitCode === 'number' ? r.exitCode : null,
        signal: typeof r.signal === 'string' ? r.signal : null,
        stdout: over ? stdout.slice(0, max) : stdout,
        stderr: over ? stderr.slice(0, max) : stderr,
        timedOut: r.timedOut === true,
        truncated: r.truncated === true || over,
        durationMs: typeof r.durationMs === 'number' ? r.durationMs : 0,
      };
    }
    case 'readFile': {
      need(isObject(result), method, 'no result object');
      const r = result as Record<string, unknown>;
      need(typeof r.content === 'string', method, 'no content string');
      need((r.content as string).length <= MAX_READ_BYTES, method, 'content over its cap');
      return {
        content: r.content,
        totalLines: typeof r.totalLines === 'number' ? r.totalLines : 0,
      };
    }
    case 'glob':
      need(Array.isArray(result), method, 'no list');
      need((result as unknown[]).length <= MAX_GLOB_RESULTS, method, 'more results than its cap');
      need(
        (result as unknown[]).every((p) => typeof p === 'string'),
        method,
        'a list of non-strings',
      );
      return result;
    case 'grep':
      need(Array.isArray(result), method, 'no list');
      need(
        (result as unknown[]).length <= 100_000 &&
          (result as unknown[]).length <= Number(params.maxMatches ?? Infinity),
        method,
        'more matches than asked for',
      );
      return result;
    case 'list':
      need(Array.isArray(result), method, 'no list');
      return result;
    case 'streamRead': {
      need(isObject(result), method, 'no result object');
      const r = result as Record<string, unknown>;
      need(r.base64 === undefined || typeof r.base64 === 'string', method, 'a non-string chunk');
      need(
        ((r.base64 as string | undefined) ?? '').length <= b64Len(STREAM_CHUNK_BYTES),
        method,
        'a chunk over its cap',
      );
      return result;
    }
    case 'httpLocal': {
      need(isObject(result), method, 'no result object');
      const r = result as Record<string, unknown>;
      need(typeof r.status === 'number', method, 'no status');
      need(
        ((r.bodyBase64 as string | undefined) ?? '').length <= b64Len(MAX_HTTP_LOCAL_BODY_BYTES),
        method,
        'a body over its cap',
      );
      return result;
    }
    default:
      return result;
  }
}
