import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false });
addFormats(ajv);
/** Query strings arrive as strings: a second instance coerces scalars and wraps single values in arrays. */
const ajvQuery = new Ajv({
  allErrors: false,
  strict: false,
  coerceTypes: 'array',
  useDefaults: false,
});
addFormats(ajvQuery);

export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

function fieldPath(instancePath: string, prefix: string): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let out = prefix;
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out;
}

/** One readable message that names the offending field. */
export function describeError(e: ErrorObject, prefix = ''): ValidationError {
  const at = fieldPath(e.instancePath, prefix);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const f = at ? `${at}.${String(p.additionalProperty)}` : String(p.additionalProperty);
      return new ValidationError(`${f}: unknown field`, f);
    }
    case 'required': {
      const f = at ? `${at}.${String(p.missingProperty)}` : String(p.missingProperty);
      return new ValidationError(`${f}: is required`, f);
    }
    case 'type':
      return new ValidationError(`${at || 'body'}: must be ${String(p.type)}`, at);
    case 'enum':
    case 'const':
      return new ValidationError(
        `${at || 'body'}: must be one of ${JSON.stringify(p.allowedValues ?? p.allowedValue)}`,
        at,
      );
    default:
      return new ValidationError(`${at || 'body'}: ${e.message ?? 'is invalid'}`, at);
  }
}

const KEYWORD_RANK: Record<string, number> = {
  additionalProperties: 3,
  required: 3,
  enum: 2,
  const: 1,
  type: 0,
};

/**
 * Picks the one error worth reporting. ajv reports every failing union branch; a branch whose
 * `type` discriminator does not match the input is noise, and "must be null" from a nullable
 * wrapper is never the helpful message when a value was given. Among what is left, the deepest
 * error wins. When every branch failed on its discriminator, the allowed values are listed.
 */
function pickError(errors: ErrorObject[]): ErrorObject {
  const isUnion = (e: ErrorObject) => e.keyword === 'anyOf' || e.keyword === 'oneOf';
  const discriminator = errors.filter(
    (e) =>
      e.keyword === 'const' &&
      e.instancePath.endsWith('/type') &&
      e.schemaPath.endsWith('/properties/type/const'),
  );
  const badBranches = discriminator.map((e) =>
    e.schemaPath.slice(0, -'/properties/type/const'.length),
  );
  let pool = errors.filter(
    (e) => !isUnion(e) && !badBranches.some((b) => e.schemaPath.startsWith(`${b}/`)),
  );
  const nonNull = pool.filter(
    (e) => !(e.keyword === 'type' && (e.params as { type?: string }).type === 'null'),
  );
  if (nonNull.length) pool = nonNull;
  if (!pool.length && discriminator.length) {
    const at = discriminator[0]!.instancePath;
    const allowed = discriminator
      .filter((e) => e.instancePath === at)
      .map((e) => (e.params as { allowedValue: unknown }).allowedValue);
    return { ...discriminator[0]!, keyword: 'enum', params: { allowedValues: allowed } };
  }
  if (!pool.length) pool = errors.filter((e) => !isUnion(e));
  if (!pool.length) pool = errors;
  return pool.reduce((best, e) => {
    const d = e.instancePath.split('/').length - best.instancePath.split('/').length;
    if (d !== 0) return d > 0 ? e : best;
    return (KEYWORD_RANK[e.keyword] ?? 1) > (KEYWORD_RANK[best.keyword] ?? 1) ? e : best;
  });
}

export interface Validator<T> {
  (value: unknown): T;
  schema: TSchema;
}

function build<S extends TSchema>(instance: Ajv, schema: S, prefix: string): Validator<Static<S>> {
  // allErrors on unions so the deepest (most specific) error can be picked.
  const fn: ValidateFunction = instance.compile(schema);
  const all = new Ajv({
    allErrors: true,
    strict: false,
    coerceTypes: instance === ajvQuery ? 'array' : false,
  });
  addFormats(all);
  let detailed: ValidateFunction | undefined;
  const v = ((value: unknown) => {
    if (fn(value)) return value as Static<S>;
    detailed ??= all.compile(schema);
    detailed(structuredClone(value));
    const errs = (detailed.errors ?? fn.errors ?? []) as ErrorObject[];
    throw describeError(pickError(errs), prefix);
  }) as Validator<Static<S>>;
  v.schema = schema;
  return v;
}

export const compileBody = <S extends TSchema>(schema: S) => build(ajv, schema, '');
export const compileQuery = <S extends TSchema>(schema: S) => build(ajvQuery, schema, '');
