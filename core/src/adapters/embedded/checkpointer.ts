/**
 * WAL checkpoints off the event loop: a worker thread with its own connection to the database
 * runs `PRAGMA wal_checkpoint(PASSIVE)` when asked. A passive checkpoint never blocks the
 * writer (the store's connection keeps committing meanwhile) and copies only committed frames;
 * its fsyncs happen in the worker, so no write waits for a checkpoint. Once everything is
 * checkpointed, SQLite restarts the WAL from its start with the next write, which bounds the
 * file. The worker starts with the first request (short-lived stores never start one). One
 * request at a time; `close()` ends the worker and its connection (before the store's
 * connection closes, so that last close checkpoints and removes the WAL).
 * Tests: core/test/store.embedded.test.ts "checkpoints the WAL …" and the dir contract variants.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.binding);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
parentPort.on('message', (m) => {
  if (m === 'close') { db.close(); process.exit(0); }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, frames: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err) });
  }
});
`;

export class Checkpointer {
  checkpoints = 0;
  error?: string;
  private inFlight = false;
  private worker?: Worker;

  constructor(private readonly file: string) {}

  private start(): Worker {
    const binding = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER, { eval: true, workerData: { file: this.file, binding } });
    worker.unref();
    worker.on('message', (m: { ok: boolean; frames?: number; error?: string }) => {
      this.inFlight = false;
      if (m.ok) {
        this.checkpoints++;
        this.error = undefined;
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
