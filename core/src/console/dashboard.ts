/**
 * The console dashboard's figures for one tenant: live counts (archived excluded), the
 * sessions running now, and the newest session errors. Errors are recorded as they are
 * appended (an event-log hook, in whichever process appends them), one small document per
 * `session.error`, so the dashboard never scans the event log; they are kept for
 * ERROR_RETENTION_MS. Proved by test/e2e/console/console-dashboard.test.ts (GraphQL `dashboard`).
 */
import type { EventLog } from '../events/log.js';
import type { Collections } from '../store/collections.js';
import type { SessionService } from '../sessions/sessions.js';
import type { SessionErrorDoc } from './records.js';

export const ERROR_RETENTION_MS = 7 * 24 * 3600_000;
const RUNNING_CAP = 1000;

export class DashboardService {
  constructor(
    private readonly c: Pick<Collections, 'agents' | 'environments' | 'sessions' | 'sessionErrors'>,
    private readonly sessions: Pick<SessionService, 'list'>,
  ) {}

  /** Records every `session.error` the log appends (wired once per process, server/). */
  recordErrorsOf(events: Pick<EventLog, 'onAppended'>): void {
    events.onAppended(async (tenant, sessionId, written) => {
      const errors = written.filter((e) => e.type === 'session.error');
      if (!errors.length) return;
      const now = Date.now();
      for (const e of errors) {
        const err = (e.payload.error ?? {}) as { type?: unknown; message?: unknown };
        await this.c.sessionErrors.insert(tenant, {
          _id: e._id,
          session_id: sessionId,
          seq: e.seq,
          type: typeof err.type === 'string' ? err.type : 'unknown_error',
          message: typeof err.message === 'string' ? err.message.slice(0, 500) : '',
          created_at: e.created_at,
          created_ms: now,
        });
      }
      await this.c.sessionErrors.deleteMany(tenant, {
        created_ms: { $lt: now - ERROR_RETENTION_MS },
      });
    });
  }

  async figures(tenant: string) {
    const [agents, environments, sessions, running, errors] = await Promise.all([
      this.c.agents.count(tenant, { archived_at: null }),
      this.c.environments.count(tenant, { archived_at: null }),
      this.c.sessions.count(tenant, { archived_at: null, deleted_at: null, thread_of: null }),
      this.sessions.list(tenant, { status: 'running', limit: RUNNING_CAP }),
      this.c.sessionErrors.find(tenant, {}, { sort: { _id: -1 }, limit: 10 }),
    ]);
    return {
      agents,
      environments,
      sessions,
      runningSessions: running.data.length,
      recentErrors: errors.map((e) => ({
        sessionId: e.session_id,
        seq: e.seq,
        type: e.type,
        message: e.message,
        createdAt: e.created_at,
      })),
    };
  }
}
