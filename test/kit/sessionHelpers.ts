/**
 * Helpers of the session tests (sessions-events, session-log-head): a scripted wire model per
 * agent, sending a user message, and waiting for the n-th session.status_idle in the log.
 */
import { BETA, waitFor, type TestPlatform } from './harness.js';

export const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });

export function sessionHelpers(platform: () => TestPlatform) {
  let modelN = 0;
  /** A fresh wire model per test keeps scripted queues apart. */
  async function agentWithModel(system = 'sys') {
    const t = platform();
    const model = `scripted-${++modelN}`;
    await t.http('/v1/svc/model_cards', {
      method: 'POST',
      headers: BETA,
      json: {
        model_id: model,
        provider: 'anthropic',
        model,
        base_url: t.model.url,
        api_key: 'sk-card',
      },
    });
    const agent = await t.client.beta.agents.create({ name: `agent-${modelN}`, model, system });
    return { model, agent };
  }
  const say = (sid: string, text: string) =>
    platform().client.beta.sessions.events.send(sid, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
  /** The session's events once the log holds `count` session.status_idle events. */
  const untilIdle = (sid: string, count = 1) =>
    waitFor(async () => {
      const ev = await json(await platform().http(`/v1/sessions/${sid}/events?limit=1000`));
      const idles = ev.body.data.filter((e: any) => e.type === 'session.status_idle');
      return idles.length >= count ? ev.body.data : null;
    });
  return { agentWithModel, say, untilIdle };
}
