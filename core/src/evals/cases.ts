/**
 * The cases of an eval start: inline `cases`, or `cases_file_id` naming a file of JSONL cases
 * (one case object per line; blank lines skipped). Every case is checked before anything is
 * stored: a bad line is a 400 naming `cases_file_id` and the line, a bad inline case names
 * `cases[i].<field>`; ids are unique in the run; each case has at least one judge (rubric,
 * check_command or expected_text). Proved by test/e2e/evals/evals.test.ts.
 */
import { compileBody, EvalCaseInput, MAX_EVAL_CASES, ValidationError } from '@agentfleet/schemas';
import { invalid } from '../errors.js';

/** Largest JSONL cases file read. */
export const MAX_CASES_FILE_BYTES = 10 * 1024 * 1024;
const checkCase = compileBody(EvalCaseInput);

export interface ParsedCase {
  case_id: string;
  prompt: string;
  rubric: string | null;
  check_command: string | null;
  expected_text: string | null;
}

export function parseJsonlCases(data: Uint8Array): EvalCaseInput[] {
  if (data.byteLength > MAX_CASES_FILE_BYTES)
    throw invalid('cases_file_id', `the cases file is over ${MAX_CASES_FILE_BYTES} bytes`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    throw invalid('cases_file_id', 'the cases file is not UTF-8 text');
  }
  const out: EvalCaseInput[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    if (out.length >= MAX_EVAL_CASES)
      throw invalid('cases_file_id', `more than ${MAX_EVAL_CASES} cases`);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw invalid('cases_file_id', `line ${i + 1} is not JSON`);
    }
    try {
      out.push(checkCase(value));
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      throw invalid('cases_file_id', `line ${i + 1}: ${err.message}`);
    }
  }
  if (!out.length) throw invalid('cases_file_id', 'the cases file holds no case');
  return out;
}

/**
 * Ids given or `case_<n>` (1-based), unique; at least one judge each; check commands only where
 * a sandbox can run them (`checkCommands`: null when allowed, else why not).
 */
export function normalizeCases(
  cases: EvalCaseInput[],
  field: 'cases' | 'cases_file_id',
  checkCommands: string | null,
): ParsedCase[] {
  const seen = new Set<string>();
  return cases.map((c, i) => {
    const at = field === 'cases' ? `cases[${i}]` : 'cases_file_id';
    const line = field === 'cases' ? '' : `case ${i + 1}: `;
    const id = c.id ?? `case_${i + 1}`;
    if (seen.has(id)) throw invalid(`${at}.id`, `${line}case id ${id} is used twice`);
    seen.add(id);
    if (!c.rubric && !c.check_command && !c.expected_text)
      throw invalid(at, `${line}a case needs rubric, check_command or expected_text to be judged`);
    if (c.check_command && checkCommands)
      throw invalid(`${at}.check_command`, `${line}not supported: ${checkCommands}`);
    return {
      case_id: id,
      prompt: c.prompt,
      rubric: c.rubric ?? null,
      check_command: c.check_command ?? null,
      expected_text: c.expected_text ?? null,
    };
  });
}
