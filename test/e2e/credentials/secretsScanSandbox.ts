/**
 * Commands the secrets-scan test (test/e2e/credentials/secrets-scan.test.ts) runs inside a sandbox, and the
 * reading of their output: a dump of every environ and cmdline visible in the sandbox, and a
 * search of every file it can read for given values that never puts a whole value in a command
 * or an argv.
 */

/**
 * Everything the sandbox can see of processes: its env, every environ and cmdline in its PID
 * namespace, in `== <name>` sections, also written to an output file; then `canary`.
 */
export const dumpCommand = (canary: string) =>
  [
    'mkdir -p /mnt/session/outputs',
    '{ echo "== env"; env; for f in /proc/[0-9]*/environ; do echo "== $f"; tr "\\0" "\\n" < "$f"; echo; done;' +
      ' for f in /proc/[0-9]*/cmdline; do echo "== $f"; tr "\\0" "\\n" < "$f"; echo; done; } 2>&1 | tee /mnt/session/outputs/env-dump.txt',
    `echo ${canary}`,
  ].join('; ');

/** After a restore: the canary file, every environ and cmdline again, env (after a pause the host can sample). */
export const DUMP_AGAIN =
  'sleep 1.5; cat /workspace/canary.txt; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo "== $f"; tr "\\0" "\\n" < "$f"; echo; done; env';

/**
 * A search of every file the sandbox can read (outside /proc, /sys, /dev and /usr) for each value,
 * printing `bound-file <label>: <path>`: one walk for all values, then each candidate file is
 * checked per value. Each value is passed as two halves joined by the shell builtin printf and
 * read by grep from stdin, so neither the command (stored in events) nor any process's argv
 * holds a whole secret.
 */
export function boundFileScan(values: Array<{ label: string; value: string }>): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const halves = values.map(({ label, value }) => {
    const half = Math.floor(value.length / 2);
    return { label: q(label), a: q(value.slice(0, half)), b: q(value.slice(half)) };
  });
  return [
    `patterns(){ ${halves.map((h) => `printf "%s%s\\n" ${h.a} ${h.b};`).join(' ')} }`,
    'check(){ printf "%s%s\\n" "$1" "$2" | grep -qsF -f - "$4" && echo "bound-file $3: $4"; }',
    'patterns | timeout 90 grep -rlsF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr -f - / 2>/dev/null > /tmp/.candidates',
    'while IFS= read -r f; do',
    ...halves.map((h) => `  check ${h.a} ${h.b} ${h.label} "$f"`),
    'done < /tmp/.candidates',
    'rm -f /tmp/.candidates',
    'echo bound-file scan done',
  ].join('\n');
}

/** The `== <name>` sections of a tool result's dump text whose lines hold `value`. */
export function dumpSectionsHolding(event: any, value: string): string[] {
  const text = JSON.stringify(event).replace(/\\n/g, '\n');
  const out = new Set<string>();
  let section = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('== ')) section = line.slice(3).trim();
    else if (section && line.includes(value)) out.add(section);
  }
  return [...out];
}
