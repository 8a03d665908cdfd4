/**
 * A model request body as UTF-8 bytes, its conversation encoded by resuming from the bytes of the
 * previous request of the same conversation. On every model call of a session the worker's kept
 * HistoryBuilder hands back the same frozen ChatMessage objects for the conversation so far
 * (workers/src/turn/history.ts: a frozen message, its blocks and its content array never change),
 * so the encoding of that prefix is fixed. ConversationBytes keeps, per conversation (PrefixMemo,
 * weakly keyed by its first message), the bytes of its frozen messages but the last, and the next
 * call whose messages start with those same objects encodes only what follows and copies the rest.
 * A request on a long session therefore costs its new messages (and one copy of the bytes), not a
 * conversion of the whole conversation to JSON and then to UTF-8 (load/README.md, "Requests on long
 * sessions"). Any other call (a different prefix, a message that is not frozen, such as a
 * file-resolved copy) encodes from the start or from its last frozen message. Memory: about the
 * conversation's JSON once more per session whose history the worker keeps; the memo goes with the
 * first message, i.e. with the worker's log-cache entry (bounded: DEFAULT_LOG_CACHE_BYTES).
 * Proved equal to JSON.stringify of the object mapping, resumed or not, by
 * core/test/wire-text.test.ts, and on the wire by the request-mapping tests of both protocols.
 */
import type { ChatMessage } from './port.js';
import { PrefixMemo } from './prefixMemo.js';

/**
 * A protocol's encoding of one message: the JSON text it adds to the array's items, each item
 * starting with a comma, and the encoder's state after it (for example the run a protocol that
 * merges same-role messages leaves open). States are values: never changed once returned.
 */
export type AddMessage<S> = (state: S, m: ChatMessage) => { text: string; state: S };

export class ConversationBytes<S> {
  private readonly memo = new PrefixMemo<{ bytes: Buffer; state: S }>();

  /** `close(state)`: the text that ends the items (a run left open); '' when nothing is. */
  constructor(
    private readonly initial: S,
    private readonly add: AddMessage<S>,
    private readonly close: (state: S) => string,
  ) {}

  /**
   * `head(state)` (given the state after every message), the items of `messages` (a comma
   * before the first one only with `comma`), `tail`.
   */
  body(
    head: (state: S) => string,
    messages: readonly ChatMessage[],
    tail: string,
    comma = false,
  ): Buffer {
    const n = messages.length;
    let bytes = EMPTY;
    let state = this.initial;
    let at = 0;
    const kept = this.memo.get(messages);
    if (kept) {
      at = kept.length;
      ({ bytes, state } = kept.value);
    }
    // Remember the bytes before the last message (the one most likely to change by the next
    // call) or before the first message that is not frozen, whichever comes first.
    let cut = at;
    while (cut < n - 1 && Object.isFrozen(messages[cut])) cut++;
    let text = '';
    for (let i = at; i < n; i++) {
      if (i === cut && cut > at) {
        bytes = Buffer.concat([bytes, Buffer.from(text)]);
        text = '';
        this.memo.set(messages, cut, { bytes, state });
      }
      const added = this.add(state, messages[i]!);
      text += added.text;
      state = added.state;
    }
    text += this.close(state);
    // The items' leading comma: in the kept bytes, or else in the new text.
    const skip = comma ? 0 : 1;
    const items = bytes.length ? bytes.subarray(skip) : EMPTY;
    const rest = `${bytes.length ? text : text.slice(skip)}${tail}`;
    const start = head(state);
    const headBytes = Buffer.byteLength(start);
    const out = Buffer.allocUnsafe(headBytes + items.length + Buffer.byteLength(rest));
    out.write(start, 0);
    items.copy(out, headBytes);
    out.write(rest, headBytes + items.length);
    return out;
  }
}

const EMPTY: Buffer = Buffer.alloc(0);

/** Each item as JSON text, each after a comma. */
export function commaJSON(items: readonly unknown[]): string {
  let text = '';
  for (const x of items) text += `,${JSON.stringify(x)}`;
  return text;
}

/** `fields` (a body without its conversation) as JSON text up to `"<key>":[`. */
export function bodyHead(fields: Record<string, unknown>, key: string): string {
  const head = JSON.stringify(fields);
  return `${head.length > 2 ? `${head.slice(0, -1)},` : '{'}${JSON.stringify(key)}:[`;
}
