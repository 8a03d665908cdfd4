/**
 * The worker's eval runner (consumer group `eval-runner`): starts eval cases from
 * `eval.case.requested`, judges them from `eval.case.finished`, and every EVAL_SCAN_MS re-drives
 * cases whose command was lost or whose worker died (core/src/evals/service.ts owns the claims
 * and the states; this file owns the consumer, the timer, the check command's sandbox call and
 * the stop order). A check command runs in the case's sandbox through this worker's sandbox
 * manager, as a tool call of the case's session would. Proved by test/e2e/evals/evals.test.ts
 * and test/e2e/evals/evals-crash.test.ts.
 */
import {
  CHECK_TIMEOUT_MS,
  type CheckRunner,
  type CommandBus,
  type EvalService,
  type Logger,
  type SandboxManager,
} from '@agentfleet/core';
import { startScanTimer } from './scanTimer.js';

export interface EvalRunner {
  stop(): Promise<void>;
}

/** The check command in the case's sandbox, from /workspace, with the check's time limit. */
export function sandboxCheck(sandbox: SandboxManager | null): CheckRunner | null {
  if (!sandbox) return null;
  return (ref, command) =>
    sandbox.run(ref, (api) =>
      api.exec({ command, cwd: '/workspace', timeoutMs: CHECK_TIMEOUT_MS, maxOutputBytes: 16_384 }),
    );
}

export async function startEvalRunner(opts: {
  bus: Pick<CommandBus, 'consume'>;
  evals: Pick<EvalService, 'startCase' | 'finishCase' | 'sweep'>;
  sandbox: SandboxManager | null;
  scanMs: number;
  log: Logger;
}): Promise<EvalRunner> {
  const { evals } = opts;
  const check = sandboxCheck(opts.sandbox);
  const consumer = await opts.bus.consume('eval-runner', {
    'eval.case.requested': async (cmd) => {
      await evals.startCase(cmd.payload.tenant_id, cmd.payload.case_id);
    },
    'eval.case.finished': async (cmd) => {
      const p = cmd.payload;
      await evals.finishCase(p.tenant_id, p.case_id, p.seq, check);
    },
  });
  const scans = startScanTimer(
    opts.scanMs,
    () => evals.sweep(check),
    (err) => opts.log.error('eval scan failed', { err: String(err) }),
  );
  return {
    stop: async () => {
      await scans.stop();
      await consumer.stop();
    },
  };
}
