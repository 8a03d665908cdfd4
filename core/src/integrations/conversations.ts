/**
 * Conversations: a verified provider event becomes a session's `user.message`, and the agent's
 * answers of each finished turn go back to the provider thread. Both run from bus commands
 * (`integration.event.received`, `integration.reply.requested`) in the worker's
 * integration-router group.
 *
 * Guarantees (test/e2e/integrations/*.test.ts):
 * - one session per thread (GitHub issue/PR, Linear issue, Slack thread): the first event
 *   creates it exactly as POST /v1/sessions does, with the publication's agent, environment and
 *   vaults; a later event of the same thread is a new `user.message` of that session;
 * - a thread is served by the most specific publication that matches (most workspace keys,
 *   then the oldest); no publication matches: nothing is created;
 * - a delivery id is turned into a message once (redelivered commands add nothing);
 * - after a turn ends (`session.status_idle`) the agent's messages since the last reply are
 *   posted to the thread through the adapter (the token never leaves the control plane), once
 *   per idle event, only when the publication has the `reply` capability;
 * - an archived or deleted session of a thread is replaced by a new one on the next event.
 */
import { createHash } from 'node:crypto';
import type { CommandBus } from '../bus/port.js';
import { ApiError } from '../errors.js';
import type { EventLog } from '../events/log.js';
import { onSessionIdle } from '../events/idleHook.js';
import type { Logger } from '../log.js';
import type { SessionService } from '../sessions/sessions.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import { nowIso } from '../util.js';
import type { InboundEvent, IntegrationProvider } from './port.js';
import { serves } from './publications.js';
import type { PublicationDoc, ThreadDoc } from './records.js';
import type { IntegrationService } from './service.js';

const KEEP_DELIVERIES = 50;
const MAX_REPLY = 60_000;

export const threadId = (integration: string, installId: string, key: string) =>
  `${integration}:${installId}:${createHash('sha256').update(key).digest('base64url').slice(0, 32)}`;

export interface ConversationDeps {
  c: Collections;
  integrations: IntegrationService;
  sessions: Pick<SessionService, 'create' | 'send' | 'getDoc'>;
  events: Pick<EventLog, 'range'>;
  log: Logger;
}

function messageOf(e: InboundEvent, provider: string): string {
  const where = e.url ? ` (${e.url})` : '';
  return `${e.author.name} on ${provider}${where}:\n\n${e.text}`;
}

export class Conversations {
  constructor(private readonly d: ConversationDeps) {}

  private async publicationFor(tenant: string, e: InboundEvent, integration: string) {
    const pubs = await this.d.c.integrationPublications.find(
      tenant,
      { integration },
      { sort: { _id: 1 } },
    );
    return (
      pubs
        .filter((p) => serves(p, e))
        .sort((a, b) => Object.keys(b.workspace).length - Object.keys(a.workspace).length)[0] ??
      null
    );
  }

  private async startSession(
    tenant: string,
    pub: PublicationDoc,
    e: InboundEvent,
    provider: IntegrationProvider,
  ) {
    // e.g. GitHub with pull_request: the event's repository, so the agent can push a branch.
    const resources = provider.sessionResources?.(e.thread.target, pub.capabilities) ?? [];
    const s = await this.d.sessions.create(tenant, {
      agent: pub.agent.version
        ? { type: 'agent', id: pub.agent.id, version: pub.agent.version }
        : pub.agent.id,
      environment_id: pub.environment_id,
      ...(pub.vault_ids.length ? { vault_ids: pub.vault_ids } : {}),
      ...(resources.length ? { resources } : {}),
      title: `${provider.name}: ${e.thread.title}`.slice(0, 200),
      metadata: { integration: pub.integration, thread: e.thread.key.slice(0, 200) },
    } as Parameters<SessionService['create']>[1]);
    return s.id;
  }

  /** The `integration.event.received` handler. */
  async handleEvent(tenant: string, installId: string, deliveryId: string, e: InboundEvent) {
    const install = await this.d.c.integrationInstalls.get(tenant, installId);
    if (!install) return; // uninstalled since: nothing to do
    const provider = this.d.integrations.provider(install.integration);
    const id = threadId(install.integration, installId, e.thread.key);
    let thread = await this.d.c.integrationThreads.get(tenant, id);
    if (thread?.deliveries.includes(deliveryId)) return;
    if (thread && !(await this.live(tenant, thread.session_id))) {
      await this.d.c.integrationThreads.deleteOne(tenant, { _id: id });
      thread = null;
    }
    if (!thread) {
      const pub = await this.publicationFor(tenant, e, install.integration);
      if (!pub) {
        this.d.log.info('integration event without a publication', {
          integration: install.integration,
          trigger: e.trigger,
        });
        return;
      }
      const sessionId = await this.startSession(tenant, pub, e, provider);
      const at = nowIso();
      const doc: ThreadDoc = {
        _id: id,
        tenant_id: tenant,
        integration: install.integration,
        install_id: installId,
        publication_id: pub._id,
        key: e.thread.key,
        target: e.thread.target,
        session_id: sessionId,
        replied_seq: 0,
        deliveries: [],
        created_at: at,
        updated_at: at,
      };
      try {
        await this.d.c.integrationThreads.insert(tenant, doc);
        thread = doc;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        thread = await this.d.c.integrationThreads.get(tenant, id);
        if (!thread) throw err;
      }
    }
    await this.d.sessions.send(tenant, thread.session_id, [
      { type: 'user.message', content: [{ type: 'text', text: messageOf(e, provider.name) }] },
    ] as Parameters<SessionService['send']>[2]);
    await this.d.c.integrationThreads.updateOne(
      tenant,
      { _id: id },
      {
        $set: {
          deliveries: [...thread.deliveries, deliveryId].slice(-KEEP_DELIVERIES),
          target: e.thread.target,
          updated_at: nowIso(),
        },
      },
    );
  }

  private async live(tenant: string, sessionId: string): Promise<boolean> {
    try {
      const s = await this.d.sessions.getDoc(tenant, sessionId);
      return !s.archived_at && !s.deleted_at;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return false;
      throw err;
    }
  }

  /** The `integration.reply.requested` handler: posts agent messages in (replied_seq, seq]. */
  async handleReply(tenant: string, sessionId: string, seq: number) {
    const thread = await this.d.c.integrationThreads.findOne(tenant, { session_id: sessionId });
    if (!thread || thread.replied_seq >= seq) return;
    const pub = await this.d.c.integrationPublications.get(tenant, thread.publication_id);
    const install = await this.d.c.integrationInstalls.get(tenant, thread.install_id);
    if (!install) return;
    const texts: string[] = [];
    if (pub?.capabilities.includes('reply')) {
      const events = await this.d.events.range(tenant, sessionId, thread.replied_seq, 10_000, seq);
      for (const ev of events) {
        if (ev.type !== 'agent.message') continue;
        const content = (ev.payload as { content?: Array<{ type?: string; text?: unknown }> })
          .content;
        for (const b of content ?? [])
          if (b?.type === 'text' && typeof b.text === 'string' && b.text.trim()) texts.push(b.text);
      }
    }
    if (texts.length) {
      const provider = this.d.integrations.provider(install.integration);
      let text = texts.join('\n\n');
      if (text.length > MAX_REPLY) text = `${text.slice(0, MAX_REPLY)}\n\n…`;
      await this.d.integrations.withCredentials(install, (creds) =>
        provider.reply(creds, thread.target, text),
      );
    }
    await this.d.c.integrationThreads.updateOne(
      tenant,
      { _id: thread._id, replied_seq: { $lt: seq } },
      { $set: { replied_seq: seq, updated_at: nowIso() } },
    );
  }
}

/**
 * The event-log hook: a `session.status_idle` of a session that serves a thread publishes
 * `integration.reply.requested`. Runs after the events are durable, in whichever process appended.
 */
export function relayIdleTurns(
  events: EventLog,
  c: Collections,
  bus: Pick<CommandBus, 'publish'>,
  log: Logger,
): void {
  onSessionIdle(events, async (tenant, sessionId, idle) => {
    const thread = await c.integrationThreads.findOne(tenant, { session_id: sessionId });
    if (!thread) return;
    try {
      await bus.publish(
        'integration.reply.requested',
        { tenant_id: tenant, session_id: sessionId, seq: idle.seq },
        { id: `reply:${idle._id}` },
      );
    } catch (err) {
      log.error('integration reply not published', { session: sessionId, err: String(err) });
    }
  });
}
