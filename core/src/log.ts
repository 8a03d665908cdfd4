/**
 * Structured JSON lines on stderr. Secrets never reach a log line: callers pass ids, not values
 * (checked at debug level over a whole lifecycle, provider errors and shutdown included, by
 * test/e2e/credentials/secrets-scan.test.ts, "no log line of the process … carries a secret").
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export function createLogger(
  level: keyof typeof LEVELS = 'info',
  base: Record<string, unknown> = {},
): Logger {
  const min = LEVELS[level];
  const write = (lvl: keyof typeof LEVELS, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    process.stderr.write(
      `${JSON.stringify({ level: lvl, time: new Date().toISOString(), msg, ...base, ...fields })}\n`,
    );
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (f) => createLogger(level, { ...base, ...f }),
  };
}
