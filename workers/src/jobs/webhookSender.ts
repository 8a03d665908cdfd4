/**
 * The worker's webhook sender: first attempts from `webhook.delivery.requested` bus commands
 * (consumer group `webhook-sender`), retries from the due-time scan every WEBHOOK_SCAN_MS (0: no
 * timer). Each attempt and each scan is core's (`webhooks.attempt`, `webhooks.sweep`,
 * core/src/webhooks/webhooks.ts); this file owns the consumer, the timer and their stop order
 * (timer, then consumer). Proved by test/e2e/webhooks/webhooks.test.ts and
 * test/e2e/webhooks/webhooks-restart.test.ts.
 */
import type { CommandBus, Logger, WebhookService } from '@agentfleet/core';
import { startScanTimer } from './scanTimer.js';

export interface WebhookSender {
  stop(): Promise<void>;
}

export async function startWebhookSender(opts: {
  bus: Pick<CommandBus, 'consume'>;
  webhooks: Pick<WebhookService, 'attempt' | 'sweep'>;
  scanMs: number;
  log: Logger;
}): Promise<WebhookSender> {
  const { webhooks } = opts;
  const consumer = await opts.bus.consume('webhook-sender', {
    'webhook.delivery.requested': async (cmd) => {
      await webhooks.attempt(cmd.payload.tenant_id, cmd.payload.delivery_id);
    },
  });
  const scans = startScanTimer(
    opts.scanMs,
    () => webhooks.sweep(),
    (err) => opts.log.error('webhook scan failed', { err: String(err) }),
  );
  return {
    async stop() {
      await scans.stop();
      await consumer.stop();
    },
  };
}
