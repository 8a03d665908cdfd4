/**
 * Standalone (not a section of `npm run bench`): how a turn's cost grows with the size of its
 * session's document. Every event append moves the session's log head, and the store writes
 * the session document whole, so a larger document costs every append. Two sessions on the
 * embedded platform: one as the bench makes them (about 0.9 KB), one with `metadata` of 16 keys
 * of 500 characters (about 9 KB; metadata never reaches the model, so the model request is the
 * same for both). `BLOCKS` alternating blocks (default 6) of `PER` sequential turns (default
 * 100) on each, then each session's POST → idle p50 and this process's CPU per turn (platform
 * and client; the scripted model runs in its own process).
 *
 *   npm run build && npx tsx load/bench/sessionSize.ts   (the built platform, as npm start runs it)
 */
import { startBenchPlatform } from './context.js';
import { openStream, turn, type Stream } from './turns.js';
import { sleep, summarize } from './stats.js';

const blocks = Number(process.env.BLOCKS ?? 6);
const per = Number(process.env.PER ?? 100);
const p = await startBenchPlatform({ SANDBOX_DRIVER: 'none' });
try {
  const { agentId, environmentId } = await p.sessions(0);
  const metadata = Object.fromEntries(
    Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(500)]),
  );
  const runs: Array<{ label: string; sid: string; stream: Stream; idle: number[]; cpuMs: number }> =
    [];
  for (const [label, extra] of [
    ['as the bench makes it', {}],
    ['with 16 x 500-character metadata', { metadata }],
  ] as const) {
    const s = await p.json<{ id: string }>('POST', '/v1/sessions', {
      agent: agentId,
      environment_id: environmentId,
      ...extra,
    });
    if (s.status !== 200) throw new Error(`create session: HTTP ${s.status}`);
    const doc = await p.json('GET', `/v1/sessions/${s.body.id}`);
    const stream = await openStream(p, s.body.id);
    runs.push({
      label: `${label} (${JSON.stringify(doc.body).length} B as served)`,
      sid: s.body.id,
      stream,
      idle: [],
      cpuMs: 0,
    });
  }
  await sleep(100);
  for (const r of runs) for (let i = 0; i < 50; i++) await turn(p, r.stream, r.sid);
  for (let b = 0; b < blocks; b++)
    for (const r of runs) {
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < per; i++) r.idle.push((await turn(p, r.stream, r.sid)).idleMs);
      const cpu = process.cpuUsage(cpu0);
      r.cpuMs += (cpu.user + cpu.system) / 1000;
    }
  for (const r of runs) {
    console.log(
      `session ${r.label}: idle p50 ${summarize(r.idle).p50.toFixed(2)} ms, CPU per turn ${(r.cpuMs / r.idle.length).toFixed(2)} ms (${r.idle.length} turns)`,
    );
    r.stream.close();
  }
} finally {
  await p.close();
}
