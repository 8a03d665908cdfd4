/**
 * Live waiting on an in-process platform's event log without knowing the session id ahead of
 * time: an `EventLog.onAppended` hook (run once the events are durable and published, as the
 * platform's own outbound webhooks are) resolves every waiter whose predicate matches an
 * appended event, with the time the hook saw it. A waiter is registered before the request
 * that causes its event, so it cannot miss it; there is no polling interval in the figure.
 */
import type { EventDoc, EventLog } from '@agentfleet/core';
import { nowMs } from './stats.js';

export type AppendMatch = (sessionId: string, event: EventDoc) => boolean;

export interface Appended {
  sessionId: string;
  event: EventDoc;
  /** nowMs() when the hook saw the event. */
  at: number;
}

export interface AppendWatch {
  /** Resolves with the first event appended from now on that `match`es; rejects after `timeoutMs`. */
  next(match: AppendMatch, timeoutMs: number, what: string): Promise<Appended>;
  close(): void;
}

export function watchAppends(log: Pick<EventLog, 'onAppended'>): AppendWatch {
  const waiters = new Set<{ match: AppendMatch; done: (a: Appended) => void }>();
  const off = log.onAppended(async (_tenant, sessionId, written) => {
    const at = nowMs();
    for (const event of written)
      for (const w of waiters) if (w.match(sessionId, event)) w.done({ sessionId, event, at });
  });
  return {
    next(match, timeoutMs, what) {
      return new Promise<Appended>((resolve, reject) => {
        const w = {
          match,
          done: (a: Appended) => {
            waiters.delete(w);
            clearTimeout(timer);
            resolve(a);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`bench: no ${what} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    close() {
      off();
      waiters.clear();
    },
  };
}

/** The text of a user.message event's first text block ('' for any other event). */
export function userText(event: EventDoc): string {
  if (event.type !== 'user.message') return '';
  const content = (event.payload as { content?: Array<{ type?: string; text?: unknown }> }).content;
  const block = content?.find((b) => b?.type === 'text');
  return typeof block?.text === 'string' ? block.text : '';
}
