/**
 * The fan-out section's model: an Anthropic Messages streaming endpoint on 127.0.0.1 with zero
 * latency that answers every POST …/v1/messages with one text block of `chunks` text deltas,
 * written back to back. Each delta's text starts with the wall-clock time (Date.now(), ms) at
 * which the model wrote it, then `|` and padding to `chunkChars`: a subscriber that reads the
 * chunk frame computes the delivery latency from the model's write to its read (both on this
 * machine's clock). GET …/models answers an empty list (capability probes).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StampedModel {
  url: string;
  close(): Promise<void>;
}

/** The text of one delta: `<ms>|` padded with `x` to `chars` characters. */
export function stampedText(chars: number, now = Date.now()): string {
  const head = `${now}|`;
  return head + 'x'.repeat(Math.max(0, chars - head.length));
}

export async function startStampedModel(chunks: number, chunkChars: number): Promise<StampedModel> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET' && /\/models\/?$/.test(req.url ?? '')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: [], has_more: false, object: 'list' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      const ev = (type: string, data: Record<string, unknown>) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      const usage = { input_tokens: 10, output_tokens: chunks };
      ev('message_start', {
        message: {
          id: `msg_fanout_${++n}`,
          type: 'message',
          role: 'assistant',
          model: 'fanout',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      });
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      for (let i = 0; i < chunks; i++)
        ev('content_block_delta', {
          index: 0,
          delta: { type: 'text_delta', text: stampedText(chunkChars) },
        });
      ev('content_block_stop', { index: 0 });
      ev('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: chunks },
      });
      ev('message_stop', {});
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
