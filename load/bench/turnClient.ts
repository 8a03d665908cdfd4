/**
 * The turn client as its own process (forked by turnClientProcess.ts): section b's and the turn
 * floor's measurement, with the client where a user's client is, outside the server's process.
 * Given a gateway URL, a key and sessions over IPC, it opens each session's SSE stream, runs
 * one warm-up turn per session, then the sequential phase (first session, `turns` turns or
 * `seconds`) and the concurrent phase (every session, `seconds`), with the same `turn` as the
 * in-process client (turns.ts), and answers the raw timings.
 */
import { benchClient } from './context.js';
import { nowMs, sleep } from './stats.js';
import { openStream, turn, type Stream } from './turns.js';

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
  let errors = 0;
  try {
    await sleep(100);
    await Promise.all(job.sessionIds.map((id, i) => turn(c, streams[i]!, id)));
    const first: number[] = [];
    const idle: number[] = [];
    const seqEnd = nowMs() + job.seconds * 1000;
    while (idle.length + errors < job.turns && nowMs() < seqEnd && errors < 3) {
      try {
        const t = await turn(c, streams[0]!, job.sessionIds[0]!);
        idle.push(t.idleMs);
        if (!Number.isNaN(t.firstChunkMs)) first.push(t.firstChunkMs);
      } catch {
        errors++;
      }
    }
    const concurrentIdle: number[] = [];
    const t0 = nowMs();
    const end = t0 + job.seconds * 1000;
    await Promise.all(
      job.sessionIds.map(async (id, i) => {
        let errs = 0;
        while (nowMs() < end && errs < 3) {
          try {
            concurrentIdle.push((await turn(c, streams[i]!, id)).idleMs);
          } catch {
            errs++;
            errors++;
          }
        }
      }),
    );
    return { first, idle, concurrentIdle, concurrentSeconds: (nowMs() - t0) / 1000, errors };
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
