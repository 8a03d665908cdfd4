/**
 * Deployment schedules: the SDK's 5-field POSIX cron (minute hour day-of-month month
 * day-of-week; 0 and 7 are Sunday; day-of-month and day-of-week OR-ed as POSIX does) in an IANA
 * timezone, parsed by croner in its 5-part mode. Refused with a 400 naming the field: another
 * field count, the extended characters L, W, #, ?, + and the @nicknames (the SDK: "not
 * supported"), values out of range, and a timezone the IANA database (Intl) does not know.
 * Minute granularity: every occurrence is a whole minute, matched on the wall clock of the
 * timezone and served as a UTC instant. Proved by test/e2e/deployments/deployments.test.ts ("bad input",
 * "one-minute schedule").
 */
import { Cron } from 'croner';
import { invalid } from '../errors.js';

export interface Schedule {
  expression: string;
  timezone: string;
}

/** Digits, `*`, `,`, `-`, `/`, and month or weekday names (JAN, MON): nothing extended. */
const FIELD =
  /^(?:\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:\/[0-9]+)?(?:,(?:\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:\/[0-9]+)?)*$/;
const NAMES = /^(?:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)$/i;

function checkTimezone(tz: string, field: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw invalid(field, `unknown IANA timezone '${tz}' (e.g. 'UTC', 'America/Los_Angeles')`);
  }
}

function parse(s: Schedule): Cron {
  return new Cron(s.expression.trim(), {
    timezone: s.timezone,
    mode: '5-part',
    paused: true,
    legacyMode: true,
  });
}

/** Throws a 400 naming `${at}.expression` or `${at}.timezone`; returns the normalised schedule. */
export function checkSchedule(s: Schedule, at = 'schedule'): Schedule {
  const expression = s.expression.trim();
  const fields = expression.split(/\s+/);
  const exprField = `${at}.expression`;
  if (fields.length !== 5)
    throw invalid(
      exprField,
      `must be a 5-field cron expression (minute hour day-of-month month day-of-week), got ${fields.length} field(s)`,
    );
  fields.forEach((f, i) => {
    const words = f.match(/[A-Za-z]+/g) ?? [];
    if (!FIELD.test(f) || words.some((w) => !NAMES.test(w) || i < 3))
      throw invalid(
        exprField,
        `field ${i + 1} ('${f}') is not POSIX cron: use numbers, *, ',', '-' and '/' (L, W, #, ? and @nicknames are not supported)`,
      );
  });
  checkTimezone(s.timezone, `${at}.timezone`);
  const normalised = { expression, timezone: s.timezone };
  try {
    parse(normalised).nextRun(new Date());
  } catch (err) {
    throw invalid(exprField, `invalid cron expression: ${(err as Error).message.slice(0, 200)}`);
  }
  return normalised;
}

/** The newest occurrence at or before `nowMs` (a whole minute, UTC ms), or null. */
export function latestOccurrence(s: Schedule, nowMs: number): number | null {
  const [d] = parse(s).previousRuns(1, new Date(nowMs + 1));
  return d ? d.getTime() : null;
}

/** Up to `n` occurrences strictly after `afterMs`, as ISO instants. */
export function upcomingOccurrences(s: Schedule, afterMs: number, n = 5): string[] {
  try {
    return parse(s)
      .nextRuns(n, new Date(afterMs))
      .map((d) => d.toISOString());
  } catch {
    return [];
  }
}
