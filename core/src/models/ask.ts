import type { ChatMessage, ModelProvider, ModelUsage } from './port.js';

/**
 * One model call whose whole text answer is wanted (dreams, the outcome grader): the text, with
 * the usage handed to `onUsage` when the stream reports it; a ModelError or AbortError
 * propagates. Proved by test/e2e/memory/dreams.test.ts and test/e2e/turns/outcomes.test.ts.
 */
export async function askModel(
  provider: ModelProvider,
  req: {
    model: string;
    system: string;
    messages: ChatMessage[];
    maxTokens: number;
    signal: AbortSignal;
  },
  onUsage: (u: ModelUsage) => void,
): Promise<string> {
  let text = '';
  for await (const ev of provider.stream(req)) {
    if (req.signal.aborted) throw req.signal.reason;
    if (ev.type === 'text_delta') text += ev.text;
    else if (ev.type === 'message_end') onUsage(ev.usage);
  }
  return text;
}
