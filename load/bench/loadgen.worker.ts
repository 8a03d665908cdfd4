/** Worker-thread entry of `runLoad`: runs the loop with the options in workerData, posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { runLoadInline, type LoadOptions } from './loadgen.js';

runLoadInline(workerData as LoadOptions).then(
  (result) => parentPort?.postMessage({ result }),
  (err: unknown) => parentPort?.postMessage({ error: String((err as Error)?.stack ?? err) }),
);
