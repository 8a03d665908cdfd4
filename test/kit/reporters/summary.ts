import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints one closing line `tests: N passed, N failed, N skipped` that CI reads, and lists
 * skipped tests by name (CI fails when a real-adapter test was skipped).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0,
      failed = 0,
      skipped = 0;
    const skippedNames: string[] = [];
    for (const m of modules) {
      // A suite that failed outside its tests (import, beforeAll) leaves its tests unrun: failures.
      const moduleFailed = m.state() === 'failed';
      let counted = 0;
      for (const t of m.children.allTests()) {
        counted++;
        const state = t.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed' || moduleFailed) failed++;
        else {
          skipped++;
          skippedNames.push(`${m.moduleId.replace(process.cwd() + '/', '')} > ${t.fullName}`);
        }
      }
      if (moduleFailed && counted === 0) failed++;
    }
    for (const n of skippedNames) process.stdout.write(`skipped: ${n}\n`);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
