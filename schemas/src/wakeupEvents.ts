/**
 * Extension `span.wakeup_scheduled` (spec Events, extension events: "extra observability"; the
 * spec shows no payload, this is ours): one per wake of a session by an alarm rather than by a
 * request, in the woken session's log, in the same append as what the wake causes:
 * - reason `deployment`: a scheduled deployment's minute fired (core/src/deployments/firing.ts)
 *   and sent its initial events to the session it created; appended right after them, by the
 *   one caller that recorded the run (so never twice, whatever the replica count). A manual run
 *   (`POST /v1/deployments/{id}/run`) is a request, not an alarm: no event.
 * - reason `recovery`: the turn runner's recovery (workers/src/turn/wakeup.ts) re-drove the
 *   session: a turn orphaned by a dead worker, resumed (first in its reconciliation's append,
 *   so once per resume), or input no worker had taken, whose turn the recovery scan's command
 *   started (right after that turn's session.status_running).
 * Keepalive is no alarm here: a sandbox keepalive only delays an idle stop and never starts a
 * turn, so it has no reason. Listed; streamed only with `?include=chunks` (./eventTypes.ts
 * EXTENSION_CANONICAL_TYPES). Proved by test/e2e/turns/wakeup-scheduled.test.ts.
 */
import { Type } from '@sinclair/typebox';
import { Id } from './common.js';
import { eventOf } from './eventEnvelope.js';

export const WAKEUP_REASONS = ['deployment', 'recovery'] as const;
const iso = Type.String({ format: 'date-time' });

export const WAKEUP_SCHEDULED_PAYLOAD = {
  reason: Type.Union(WAKEUP_REASONS.map((r) => Type.Literal(r))),
  /**
   * When the alarm was due: the deployment's scheduled minute; for recovery, when the scan
   * found the orphaned turn (its run's rescheduled_at) or published the command that started
   * the turn (else the wake instant).
   */
  scheduled_at: iso,
  /** When it woke the session: the firing instant, or when the recovering worker took it. */
  woken_at: iso,
  /** reason `deployment`: the deployment and the run that fired. */
  deployment_id: Type.Optional(Id('depl_')),
  deployment_run_id: Type.Optional(Id('drun_')),
  /** reason `recovery` of an orphaned turn: the run record of the turn resumed. */
  run_id: Type.Optional(Id('run_')),
  /** reason `recovery`: `orphaned_turn` or `pending_input`. */
  detail: Type.Optional(Type.Union([Type.Literal('orphaned_turn'), Type.Literal('pending_input')])),
};

export const WakeupScheduledEvent = eventOf('span.wakeup_scheduled', WAKEUP_SCHEDULED_PAYLOAD);

/** Merged into the session event catalog (./events.ts EVENT_PAYLOADS, SESSION_EVENT_SCHEMAS). */
export const WAKEUP_EVENT_PAYLOADS = { 'span.wakeup_scheduled': WAKEUP_SCHEDULED_PAYLOAD };
export const WAKEUP_EVENT_SCHEMAS = { 'span.wakeup_scheduled': WakeupScheduledEvent };
