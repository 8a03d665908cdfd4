/**
 * A value kept per conversation for a prefix of its messages, valid for a later call whose
 * messages start with the same objects. A kept history (workers/src/turn/history.ts) hands back the
 * same frozen ChatMessage objects on every call of a session, so what was derived from a frozen
 * prefix still holds: the request bytes (wireText.ts) and the file scan
 * (workers/src/turn/fileBlocks.ts) resume from it. Keyed weakly by the first message: the memo goes
 * with the history that holds it. Only frozen messages belong in a kept prefix (the callers
 * stop at the first one that is not).
 */
import type { ChatMessage } from './port.js';

export class PrefixMemo<V> {
  private readonly memo = new WeakMap<ChatMessage, { msgs: ChatMessage[]; value: V }>();

  /** The value kept for a prefix of `messages` (the same objects) and its length, if any. */
  get(messages: readonly ChatMessage[]): { length: number; value: V } | undefined {
    const kept = messages.length ? this.memo.get(messages[0]!) : undefined;
    if (!kept || kept.msgs.length > messages.length) return undefined;
    for (let i = kept.msgs.length - 1; i >= 0; i--)
      if (kept.msgs[i] !== messages[i]) return undefined;
    return { length: kept.msgs.length, value: kept.value };
  }

  /** Keeps `value` for messages[0, length); length ≥ 1. */
  set(messages: readonly ChatMessage[], length: number, value: V): void {
    this.memo.set(messages[0]!, { msgs: messages.slice(0, length), value });
  }
}
