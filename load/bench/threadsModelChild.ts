/**
 * The scripted model (test/kit/fixtures/scriptedModel.ts, zero latency, answers 'ok') in a process
 * of its own for the threads section (threads.ts), started by procs.ts startModelProcess like
 * modelChild.ts, which it extends with two IPC requests:
 * - `{ id, script: model, responses }` queues the responses for `model` (the coordinator's
 *   eight start_thread calls) and answers `{ id }` once they are queued;
 * - `{ id, counts: true }` answers `{ id, counts }`: requests received so far per model.
 * It keeps no request bodies, and exits when its parent goes (the IPC channel closes).
 */
const fixture = new URL('../../test/kit/fixtures/scriptedModel.ts', import.meta.url).href;
const { startScriptedModelServer } = (await import(fixture)) as {
  startScriptedModelServer: () => Promise<{
    url: string;
    requests: Array<{ model: string }>;
    script(model: string, ...responses: unknown[]): void;
  }>;
};
const model = await startScriptedModelServer();
const counts: Record<string, number> = {};
model.requests.push = (...rs) => {
  for (const r of rs) counts[r.model] = (counts[r.model] ?? 0) + 1;
  return 0;
};

interface Request {
  id: number;
  script?: string;
  responses?: unknown[];
  counts?: boolean;
}
process.on('message', (m: Request) => {
  if (m.script) model.script(m.script, ...(m.responses ?? []));
  process.send!(m.counts ? { id: m.id, counts: { ...counts } } : { id: m.id });
});
process.on('disconnect', () => process.exit(0));
process.send!({ url: model.url });
