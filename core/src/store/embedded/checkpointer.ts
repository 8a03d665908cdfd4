/**
 * WAL checkpoints, nearly all off the event loop: a worker thread with its own connection to
 * the database runs passive checkpoints when asked; their copying and fsyncs happen there, and
 * they never block the writer. Passive checkpoints alone do not bound the WAL under sustained
 * writes: frames committed while one copies are left behind, and SQLite restarts the WAL only
 * once every frame is copied, so the file grew without bound (4.7 GB after 320k appends
 * without a pause, measured). So one request runs passive rounds while each still finds more
 * than SMALL_FRAMES new frames (at most MAX_ROUNDS), and reports back; the store then runs one
 * TRUNCATE checkpoint on its own connection between two commits (`onCaughtUp`): it copies the
 * few frames written since the last round, syncs, and empties the WAL file. That step is the
 * only one on the event loop, and its size is what was committed during one passive round's
 * tail. The worker starts with the first request (short-lived stores never start one). One
 * request at a time; `close()` ends the worker and its connection (before the store's
 * connection closes, so that last close checkpoints and removes the WAL).
 * Tests: core/test/store.checkpoint.test.ts, and the checkpointing dir variant of the contract
 * in core/test/store.embedded.test.ts.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER = () => `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.binding);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
const SMALL_FRAMES = ${SMALL_FRAMES};
const MAX_ROUNDS = ${MAX_ROUNDS};
parentPort.on('message', (m) => {
  if (m === 'close') { db.close(); process.exit(0); }
  try {
    let frames = 0;
    let seen = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const [r] = db.pragma('wal_checkpoint(PASSIVE)');
      frames += Math.max(0, r.checkpointed);
      const fresh = r.log - seen;
      seen = r.log;
      if (fresh <= SMALL_FRAMES) break;
    }
    parentPort.postMessage({ ok: true, frames });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err) });
  }
});
`;

/** New frames a last passive round may find (4 KiB pages: 1 MiB); the rest is the store's. */
const SMALL_FRAMES = 256;
const MAX_ROUNDS = 8;

export class Checkpointer {
  checkpoints = 0;
  /** Called when a request's passive rounds are done (the worker is idle again). */
  onCaughtUp?: () => void;
  error?: string;
  private inFlight = false;
  private worker?: Worker;

  constructor(private readonly file: string) {}

  private start(): Worker {
    const binding = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER(), { eval: true, workerData: { file: this.file, binding } });
    worker.unref();
    worker.on('message', (m: { ok: boolean; error?: string }) => {
      this.inFlight = false;
      if (m.ok) {
        this.checkpoints++;
        this.error = undefined;
        this.onCaughtUp?.();
      } else this.error = m.error;
    });
    worker.on('error', (err) => {
      this.inFlight = false;
      this.error = String(err);
    });
    return worker;
  }

  /** Asks for a checkpoint unless one is running; returns whether it asked. */
  request(): boolean {
    if (this.inFlight) return false;
    this.inFlight = true;
    this.worker ??= this.start();
    this.worker.postMessage('checkpoint');
    return true;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Unref'd while idle; ref'd for the close, or a process with nothing else pending would
    // exit before the worker's 'exit' arrives (close() would never resolve).
    worker.ref();
    worker.postMessage('close');
    await exited;
  }
}
