/**
 * Section n: an eval of 100 cases against the scripted model (its default answer `ok`; every
 * case judged by `expected_text: "ok"`, so no sandbox starts), 16 at a time, on its own
 * in-process platform (embedded adapters, EVAL_SCAN_MS 1 s): cases per minute from the start
 * request until the run reads `completed`. Beside it, as the baseline of the same run, the
 * same 100 prompts as plain sessions a client drives 16 at a time (create, send, poll until
 * idle): what the eval machinery (dispatch, the bus commands, judging, the ledger read per
 * case) adds to running the sessions themselves. Figures only.
 */
import { startBenchPlatform } from './context.js';
import { svc } from './svc.js';
import { fmt, nowMs, printSection, printTable } from './stats.js';

const CASES = Number(process.env.BENCH_EVAL_CASES ?? 100);
const CONCURRENCY = 16;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface EvalFigures {
  cases: number;
  evalSeconds: number;
  evalCasesPerMin: number;
  baselineSeconds: number;
  baselineSessionsPerMin: number;
  passed: number;
}

export async function evalsSection(): Promise<EvalFigures> {
  printSection(
    `n. An eval of ${CASES} cases (expected text, ${CONCURRENCY} at a time) beside the same prompts as client-driven sessions`,
  );
  const p = await startBenchPlatform({
    EVAL_SCAN_MS: '1000',
    EVAL_TENANT_CONCURRENCY: String(CONCURRENCY),
  });
  try {
    const { agentId, environmentId } = await p.sessions(0);
    const prompts = Array.from({ length: CASES }, (_, i) => `Case ${i}: answer ok.`);

    // Baseline: the client drives the sessions itself.
    const b0 = nowMs();
    let next = 0;
    const drive = async () => {
      for (let i = next++; i < CASES; i = next++) {
        const s = await svc(p, 'POST', '/v1/sessions', {
          agent: agentId,
          environment_id: environmentId,
        });
        await p.json('POST', `/v1/sessions/${s.id}/events`, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: prompts[i] }] }],
        });
        for (;;) {
          const r = await p.json<{ status: string; stats?: unknown }>(
            'GET',
            `/v1/sessions/${s.id}`,
          );
          if (r.body.status === 'idle') {
            const ev = await p.json<{ data: Array<{ type: string }> }>(
              'GET',
              `/v1/sessions/${s.id}/events?limit=50`,
            );
            if (ev.body.data.some((e) => e.type === 'session.status_idle')) break;
          }
          await sleep(50);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, drive));
    const baselineSeconds = (nowMs() - b0) / 1000;

    // The eval.
    const e0 = nowMs();
    const run = await svc(p, 'POST', '/v1/svc/evals', {
      agent: agentId,
      environment_id: environmentId,
      concurrency: CONCURRENCY,
      cases: prompts.map((prompt) => ({ prompt, expected_text: 'ok' })),
    });
    let done: any;
    for (;;) {
      done = await svc(p, 'GET', `/v1/svc/evals/${run.id}`);
      if (done.status !== 'queued' && done.status !== 'running') break;
      await sleep(100);
    }
    const evalSeconds = (nowMs() - e0) / 1000;
    if (done.status !== 'completed' || done.summary.total !== CASES)
      throw new Error(`eval ended ${done.status}: ${JSON.stringify(done.summary)}`);
    const figures: EvalFigures = {
      cases: CASES,
      evalSeconds,
      evalCasesPerMin: (CASES / evalSeconds) * 60,
      baselineSeconds,
      baselineSessionsPerMin: (CASES / baselineSeconds) * 60,
      passed: done.summary.passed,
    };
    printTable(
      `${CASES} prompts, ${CONCURRENCY} at a time (scripted model, embedded adapters)`,
      ['how', 'seconds', 'per minute'],
      [
        ['eval run (cases)', fmt(evalSeconds, 2), fmt(figures.evalCasesPerMin, 0)],
        [
          'client-driven sessions (baseline)',
          fmt(baselineSeconds, 2),
          fmt(figures.baselineSessionsPerMin, 0),
        ],
      ],
      [`eval: ${done.summary.passed} of ${CASES} cases passed`],
    );
    return figures;
  } finally {
    await p.close();
  }
}
