/**
 * The scripted model server (test/kit/fixtures/scriptedModel.ts, zero latency, answers 'ok') in a
 * process of its own, for procs.ts startModelProcess: it answers `{ url }` over IPC once it
 * listens on 127.0.0.1, and exits when its parent goes (the IPC channel closes). It keeps no
 * request bodies: the bench sections that run against it only time the platform.
 */
const fixture = new URL('../../test/kit/fixtures/scriptedModel.ts', import.meta.url).href;
const { startScriptedModelServer } = (await import(fixture)) as {
  startScriptedModelServer: () => Promise<{ url: string; requests: unknown[] }>;
};
const model = await startScriptedModelServer();
model.requests.push = () => 0;
process.on('disconnect', () => process.exit(0));
process.send!({ url: model.url });
