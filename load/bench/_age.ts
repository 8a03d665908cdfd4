import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { startBenchPlatform } from './context.js';
import { sleep, summarize } from './stats.js';
import { openStream, turn } from './turns.js';
const p = await startBenchPlatform({ SANDBOX_DRIVER: 'none' });
const [sid] = (await p.sessions(1)).sessionIds;
const stream = await openStream(p, sid!);
await sleep(100);
const blocks = Number(process.env.BLOCKS ?? 8), per = 500;
for (let b = 0; b < blocks; b++) {
  const prof = b === blocks - 1 && process.env.PROF ? new Session() : null;
  if (prof) { prof.connect(); await prof.post('Profiler.enable'); await prof.post('Profiler.start'); }
  const idle: number[] = [];
  for (let i = 0; i < per; i++) idle.push((await turn(p, stream, sid!)).idleMs);
  if (prof) writeFileSync(process.env.PROF!, JSON.stringify((await prof.post('Profiler.stop')).profile));
  console.log(`turns ${b * per}-${(b + 1) * per}: idle p50 ${summarize(idle).p50.toFixed(2)} ms`);
}
stream.close();
await p.close();
