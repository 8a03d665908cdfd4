/**
 * The turn client as its own process (forked by turnClientProcess.ts): section b's and the turn
 * floor's measurement, with the client where a user's client is, outside the server's process.
 * Given a gateway URL, a key and sessions over IPC, it opens each session's SSE stream, runs
 * one warm-up turn per session, then the sequential phase (first session, `turns` turns or
 * `seconds`) and the concurrent phase (every session, `seconds`), with the same phase code as
 * the in-process client (turns.ts sequentialTurns, concurrentTurns), and answers the raw timings.
 */
import { benchClient } from './context.js';
import { nowMs, sleep } from './stats.js';
import { concurrentTurns, openStream, sequentialTurns, turn, type Stream } from './turns.js';

export interface TurnJob {
  url: string;
  apiKey: string;
  sessionIds: string[];
  turns: number;
  seconds: number;
}

export interface TurnJobResult {
  first: number[];
  idle: number[];
  concurrentIdle: number[];
  concurrentSeconds: number;
  errors: number;
}

async function run(job: TurnJob): Promise<TurnJobResult> {
  const c = benchClient(job.url, job.apiKey);
  const streams: Stream[] = await Promise.all(job.sessionIds.map((id) => openStream(c, id)));
  try {
    await sleep(100);
    await Promise.all(job.sessionIds.map((id, i) => turn(c, streams[i]!, id)));
    const seq = await sequentialTurns(c, streams[0]!, job.sessionIds[0]!, job.turns, job.seconds);
    const t0 = nowMs();
    const conc = await concurrentTurns(c, streams, job.sessionIds, job.seconds);
    return {
      first: seq.first,
      idle: seq.idle,
      concurrentIdle: conc.idle,
      concurrentSeconds: (nowMs() - t0) / 1000,
      errors: seq.errors + conc.errors,
    };
  } finally {
    for (const st of streams) st.close();
    c.agent.destroy();
  }
}

// The bench is gone (killed, or gave up on this client): nothing is left to answer.
process.once('disconnect', () => process.exit(1));
process.once('message', (job: TurnJob) => {
  run(job).then(
    (result) => process.send!({ result }, () => process.exit(0)),
    (err: Error) => process.send!({ error: err.message }, () => process.exit(1)),
  );
});
