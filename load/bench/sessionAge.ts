/**
 * Standalone (not a section of `npm run bench`): how a turn's cost grows with its session's
 * age. One session on the embedded platform, `BLOCKS` blocks (default 8) of `PER` sequential
 * turns (default 500; each turn adds 6 events), printing each block's POST → idle p50. A turn
 * here is section b's: zero-latency scripted model in its own process, SSE open, platform and
 * client in this process. The model request carries the whole conversation, so its encoding
 * (and the scripted model's parsing of it) grows with the session whatever the platform does;
 * the rest should not.
 * `PROF=<file>` writes a CPU profile of the last block (Chrome DevTools format).
 *
 *   npm run build && npx tsx load/bench/sessionAge.ts   (the built platform, as npm start runs it)
 */
import { startBenchPlatform } from './context.js';
import { cpuProfile } from './cpuProfile.js';
import { summarize } from './stats.js';
import { sessionWithStream, turn } from './turns.js';

const blocks = Number(process.env.BLOCKS ?? 8);
const per = Number(process.env.PER ?? 500);
const p = await startBenchPlatform({ SANDBOX_DRIVER: 'none' });
try {
  const { sid, stream } = await sessionWithStream(p);
  for (let b = 0; b < blocks; b++) {
    const stop = await cpuProfile(b === blocks - 1 ? process.env.PROF : undefined);
    const idle: number[] = [];
    for (let i = 0; i < per; i++) idle.push((await turn(p, stream, sid)).idleMs);
    await stop();
    console.log(`turns ${b * per}-${(b + 1) * per}: idle p50 ${summarize(idle).p50.toFixed(2)} ms`);
  }
  stream.close();
} finally {
  await p.close();
}
