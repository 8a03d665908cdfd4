/**
 * The machinery of the configuration schema (core/src/config/config.ts composes the sections).
 *
 * A setting is a TypeBox schema whose options carry `setting`: its environment variable, kind,
 * default, description and secrecy. The kind decides how the variable is read, by one parser
 * each:
 * - int: an integer in [min, max]; unset or empty: the default; anything else is the problem
 *   "X must be an integer between min and max (got '…')" and the default is used.
 * - bool: 'true' or 'false'; unset or empty: the default (false); else "X must be 'true' or 'false'".
 * - enum: one of `values`; unset or empty: the default; else "X must be 'a' or 'b'" (or `problem`).
 * - string: unset: the default; set shorter than `minLength` (even empty): a problem; empty
 *   (after `trim`): the default; not matching `pattern`: a problem (`problem`). A string that
 *   is a problem keeps its value, so the rules between settings see it as set.
 * - path: resolved against the working directory; unset or empty: the default (null: none).
 * - sha256: the SHA-256 of the value; unset or empty: null.
 * - custom: `parse(raw)` for a value with its own syntax (lists of hosts, JSON, host:port);
 *   unset or empty: the default.
 * - derived: no variable; `value(ctx)` (the role started, a constant, another setting).
 * Then `check` (a rule against other settings) adds its problem. Every variable is read and
 * checked once (`ReadContext.get`), whichever setting asks first. Problems never quote a value
 * except where the kind says so (int, and the host lists' entries): no secret is echoed.
 *
 * `group` is an object that exists only when some of its settings are set (else null);
 * `section` an object whose `rules` run once it is read and whose `refuses` are variables
 * whose mere presence is a problem. `redact` and `docRows` walk the same schemas.
 */
import { resolve } from 'node:path';
import {
  Type,
  type Static,
  type TBoolean,
  type TInteger,
  type TLiteral,
  type TNull,
  type TObject,
  type TProperties,
  type TSchema,
  type TString,
  type TUnion,
} from '@sinclair/typebox';
import { sha256 } from '../crypto.js';

export type Env = Record<string, string | undefined>;

export interface ReadContext {
  readonly env: Env;
  /** Every problem found; loadConfig throws them all at once. */
  readonly problems: string[];
  /** The role being started (loadConfig's argument). */
  readonly role: string;
  /** Another setting's value by its variable: read and checked once, on first use. */
  get(name: string): unknown;
}

type Kind = 'int' | 'bool' | 'enum' | 'string' | 'path' | 'sha256' | 'custom' | 'derived';
type Problem = string | false | undefined | null;

export interface Setting {
  kind: Kind;
  /** The environment variable (none for a derived value). */
  env?: string;
  /** Read when `env` is unset or empty. */
  aliases?: readonly string[];
  description: string;
  default?: unknown;
  /** A default that depends on other settings (or, for a derived value, the value). */
  defaultFrom?: (ctx: ReadContext) => unknown;
  /** The default as the docs table shows it (else `default`). */
  docDefault?: string;
  /** Never logged (redactedConfig) and marked in the docs table. */
  secret?: boolean;
  /** A value logged in part (credentials cut out of a URL). */
  redact?: (value: any) => unknown;
  problem?: string;
  min?: number;
  max?: number;
  values?: readonly string[];
  pattern?: RegExp;
  minLength?: number;
  trim?: boolean;
  parse?: (raw: string, ctx: ReadContext) => unknown;
  check?: (value: any, ctx: ReadContext, name: string) => Problem;
}

export interface Refused {
  env: string;
  problem: string;
  description: string;
}

interface Common<T> {
  description: string;
  default?: T | null;
  defaultFrom?: (ctx: ReadContext) => T | null;
  docDefault?: string;
  secret?: boolean;
  redact?: (value: T) => unknown;
  aliases?: readonly string[];
  problem?: string;
  check?: (value: T, ctx: ReadContext, name: string) => Problem;
}

interface GroupOptions<P extends TProperties> {
  /** The group exists when these settings all have a value. */
  when: (keyof P & string)[];
  /** Reads the group itself (its settings stay the documented ones). */
  read?: (ctx: ReadContext) => Static<TObject<P>> | null;
}

interface SectionOptions<P extends TProperties> {
  rules?: (value: Static<TObject<P>>, ctx: ReadContext) => Problem[];
  refuses?: Refused[];
}

const MAX = Number.MAX_SAFE_INTEGER;

/** A copy of the schema carrying the setting (a schema may be shared by several settings). */
const withSetting = <S extends TSchema>(schema: S, setting: Setting): S => ({ ...schema, setting });

export const settingOf = (schema: TSchema): Setting | undefined =>
  (schema as { setting?: Setting }).setting;

export const int = (env: string, o: Common<number> & { min?: number; max?: number }): TInteger => {
  const [min, max] = [o.min ?? 0, o.max ?? MAX];
  return withSetting(Type.Integer({ minimum: min, maximum: max }), {
    ...o,
    kind: 'int',
    env,
    min,
    max,
  });
};

export const bool = (env: string, o: Common<boolean>): TBoolean =>
  withSetting(Type.Boolean(), { default: false, ...o, kind: 'bool', env });

export const oneOf = <const V extends readonly [string, ...string[]]>(
  env: string,
  values: V,
  o: Common<V[number]>,
): TUnion<TLiteral<V[number]>[]> =>
  withSetting(Type.Union(values.map((v) => Type.Literal(v))), {
    ...o,
    kind: 'enum',
    env,
    values,
  }) as TUnion<TLiteral<V[number]>[]>;

export const str = (
  env: string,
  o: Common<string> & { pattern?: RegExp; minLength?: number; trim?: boolean },
): TString =>
  withSetting(Type.String(o.pattern ? { pattern: o.pattern.source } : {}), {
    ...o,
    kind: 'string',
    env,
  });

export const path = (env: string, o: Common<string>): TString =>
  withSetting(Type.String(), { ...o, kind: 'path', env });

/** The setting holds the SHA-256 hex digest of the variable's value (null when unset). */
export const hashOf = (env: string, o: Common<string>): TString =>
  withSetting(Type.String(), { ...o, kind: 'sha256', env });

export const custom = <S extends TSchema>(
  schema: S,
  env: string,
  parse: (raw: string, ctx: ReadContext) => Static<S>,
  o: Common<Static<S>>,
): S => withSetting(schema, { ...o, kind: 'custom', env, parse });

/** A value no variable sets: the role started, a constant, another setting's value. */
export const derived = <S extends TSchema>(
  schema: S,
  description: string,
  value: (ctx: ReadContext) => Static<S>,
): S => withSetting(schema, { kind: 'derived', description, defaultFrom: value });

/** The setting, or null when unset (its default unless it names one). */
export const nullable = <S extends TSchema>(schema: S): TUnion<[S, TNull]> => {
  const s = settingOf(schema)!;
  return Type.Union([schema, Type.Null()], {
    setting: { ...s, default: s.default ?? null },
  });
};

export const group = <P extends TProperties>(
  props: P,
  o: GroupOptions<P>,
): TUnion<[TObject<P>, TNull]> => Type.Union([Type.Object(props), Type.Null()], { group: o });

export const section = <P extends TProperties>(props: P, o: SectionOptions<P> = {}): TObject<P> =>
  Type.Object(props, { section: o });

/** The check "X must not be larger than OTHER" (skipped while OTHER is unset). */
export const notLargerThan =
  (other: string) =>
  (v: number, ctx: ReadContext, name: string): Problem => {
    const o = ctx.get(other);
    return typeof o === 'number' && v > o && `${name} must not be larger than ${other}`;
  };

/** The check "X must be lower than OTHER". */
export const lowerThan =
  (other: string) =>
  (v: number, ctx: ReadContext, name: string): Problem => {
    const o = ctx.get(other);
    return typeof o === 'number' && v >= o && `${name} must be lower than ${other}`;
  };

/** The check "X needs OTHER": X set, OTHER not. */
export const needs =
  (other: string) =>
  (v: unknown, ctx: ReadContext, name: string): Problem =>
    !!v && !ctx.get(other) && `${name} needs ${other}`;

/** A URL for the logs: its user and password replaced (mongodb://[redacted]@host/db). */
export const withoutCredentials = (url: string): string =>
  url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/?#]*@/i, `$1${REDACTED}@`);

const alternatives = (vs: readonly string[]) => {
  const q = vs.map((v) => `'${v}'`);
  return q.length === 1 ? q[0]! : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
};

/** The int kind's parser, for a variable read outside a schema walk (sandboxUser.ts). */
export function readInt(
  raw: string | undefined,
  name: string,
  def: () => unknown,
  problems: string[],
  min = 0,
  max = MAX,
): unknown {
  if (raw === undefined || raw === '') return def();
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name} must be an integer between ${min} and ${max} (got '${raw}')`);
    return def();
  }
  return n;
}

type Parser = (
  raw: string | undefined,
  s: Setting,
  def: () => unknown,
  ctx: ReadContext,
  name: string,
) => unknown;

const PARSERS: Record<Kind, Parser> = {
  int: (raw, s, def, ctx, name) => readInt(raw, name, def, ctx.problems, s.min, s.max),
  bool: (raw, s, def, ctx, name) => {
    if (!raw) return def();
    if (raw === 'true' || raw === 'false') return raw === 'true';
    ctx.problems.push(s.problem ?? `${name} must be 'true' or 'false'`);
    return def();
  },
  enum: (raw, s, def, ctx, name) => {
    if (!raw) return def();
    if (s.values!.includes(raw)) return raw;
    ctx.problems.push(s.problem ?? `${name} must be ${alternatives(s.values!)}`);
    return def();
  },
  string: (raw, s, def, ctx, name) => {
    if (raw === undefined) return def();
    if (s.minLength !== undefined && raw.length < s.minLength) {
      ctx.problems.push(s.problem ?? `${name} must be at least ${s.minLength} characters`);
      return raw;
    }
    const v = s.trim ? raw.trim() : raw;
    if (v === '') return def();
    if (s.pattern && !s.pattern.test(v))
      ctx.problems.push(s.problem ?? `${name} must match ${s.pattern.source}`);
    return v;
  },
  path: (raw, _s, def) => {
    const v = raw || def();
    return typeof v === 'string' ? resolve(v) : null;
  },
  sha256: (raw) => (raw ? sha256(raw) : null),
  custom: (raw, s, def, ctx) => (raw ? s.parse!(raw, ctx) : def()),
  derived: (_raw, _s, def) => def(),
};

/** Every setting with a variable, by variable (the first one declared). */
export function settingsByEnv(schemas: TSchema[]): Map<string, Setting> {
  const index = new Map<string, Setting>();
  const walk = (schema: TSchema) => {
    const s = settingOf(schema);
    if (s) {
      if (s.env && !index.has(s.env)) index.set(s.env, s);
    } else if (schema.group) walk(schema.anyOf[0]);
    else if (schema.type === 'object')
      for (const p of Object.values(schema.properties)) walk(p as TSchema);
  };
  schemas.forEach(walk);
  return index;
}

export function readContext(
  env: Env,
  role: string,
  index: Map<string, Setting>,
  problems: string[] = [],
): ReadContext {
  const values = new Map<string, unknown>();
  const reading = new Set<string>();
  const ctx: ReadContext = {
    env,
    role,
    problems,
    get(name) {
      if (values.has(name)) return values.get(name);
      const s = index.get(name);
      if (!s) throw new Error(`config schema: no setting reads ${name}`);
      if (reading.has(name)) throw new Error(`config schema: ${name} depends on itself`);
      reading.add(name);
      let raw = env[name];
      for (const alias of s.aliases ?? []) raw ||= env[alias];
      const def = () => (s.defaultFrom ? s.defaultFrom(ctx) : s.default);
      const value = PARSERS[s.kind](raw, s, def, ctx, name);
      const problem = s.check?.(value, ctx, name);
      if (problem) problems.push(problem);
      values.set(name, value);
      return value;
    },
  };
  return ctx;
}

/** The value a schema describes, read from the context's environment. */
export function readSchema(schema: TSchema, ctx: ReadContext): unknown {
  const s = settingOf(schema);
  if (s) return s.env ? ctx.get(s.env) : s.defaultFrom!(ctx);
  const g = schema.group as GroupOptions<TProperties> | undefined;
  if (g) {
    if (g.read) return g.read(ctx);
    const v = readSchema(schema.anyOf[0], ctx) as Record<string, unknown>;
    return g.when.every((k) => v[k] !== null && v[k] !== undefined) ? v : null;
  }
  if (schema.type !== 'object') throw new Error('config schema: neither a setting nor an object');
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(schema.properties as TProperties)) {
    const v = readSchema(p, ctx);
    if (v !== undefined) out[k] = v;
  }
  const o = schema.section as SectionOptions<TProperties> | undefined;
  for (const r of o?.refuses ?? []) if (ctx.env[r.env]) ctx.problems.push(r.problem);
  for (const p of o?.rules?.(out as never, ctx) ?? []) if (p) ctx.problems.push(p);
  return out;
}

export const REDACTED = '[redacted]';

/** The value with every secret setting replaced by "[redacted]" (omitted when unset). */
export function redact(schema: TSchema, value: unknown): unknown {
  const s = settingOf(schema);
  if (s) {
    if (value === null || value === undefined) return s.secret ? undefined : value;
    return s.secret ? REDACTED : s.redact ? s.redact(value) : value;
  }
  if (value === null || value === undefined) return value;
  if (schema.group) return redact(schema.anyOf[0], value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const p = (schema.properties as TProperties)[k];
    // A field the schema does not describe is not logged.
    const r = p ? redact(p, v) : undefined;
    if (r !== undefined) out[k] = r;
  }
  return out;
}

export interface DocRow {
  env: string;
  aliases: readonly string[];
  default: string;
  description: string;
  secret: boolean;
}

const docDefault = (s: Setting): string => {
  if (s.docDefault !== undefined) return s.docDefault;
  const d = s.default;
  if (d === undefined || d === null) return 'unset';
  if (Array.isArray(d)) return d.length ? `\`${d.join(',')}\`` : 'empty';
  return `\`${String(d)}\``;
};

/** The documented variables of a schema, in declaration order (refused ones after their section's). */
export function docRows(schema: TSchema): DocRow[] {
  const s = settingOf(schema);
  if (s)
    return s.env
      ? [
          {
            env: s.env,
            aliases: s.aliases ?? [],
            default: docDefault(s),
            description: s.description,
            secret: !!s.secret,
          },
        ]
      : [];
  if (schema.group) return docRows(schema.anyOf[0]);
  if (schema.type !== 'object') return [];
  const rows = Object.values(schema.properties as TProperties).flatMap(docRows);
  for (const r of (schema.section as SectionOptions<TProperties> | undefined)?.refuses ?? [])
    rows.push({
      env: r.env,
      aliases: [],
      default: 'unset',
      description: r.description,
      secret: false,
    });
  return rows;
}
