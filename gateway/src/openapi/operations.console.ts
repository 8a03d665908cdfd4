/**
 * OpenAPI entries of the console's sign-in routes (../routes/console.ts): the public config and
 * key sign-in, and the cookie-only who-am-I and sign-out routes. test/e2e/api/openapi.test.ts
 * fails when a route lacks an entry; test/e2e/console/console-auth.test.ts proves the behaviour.
 */
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const Role = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')]);
const Me = Type.Object(
  {
    user: Type.Union([
      Type.Null(),
      Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }),
    ]),
    operator: Type.Boolean(),
    tenant: Type.Object({ id: Type.String(), name: Type.String() }),
    role: Role,
    csrf_token: Type.String(),
    memberships: Type.Array(
      Type.Object({ tenant_id: Type.String(), tenant_name: Type.String(), role: Role }),
    ),
    expires_at: Type.String(),
  },
  { additionalProperties: false },
);
const SignedOut = Type.Object({ signed_out: Type.Literal(true) }, { additionalProperties: false });
const cookieOnly =
  'Needs the console cookie (af_console); an API key alone is answered 403. Writes with the cookie need the x-csrf-token header from /me.';

export const CONSOLE_OPERATIONS: Record<string, OperationDoc> = {
  'GET /v1/svc/console/config': {
    operationId: 'consoleConfig',
    summary: 'How the console can be signed in to (identity providers, key sign-in)',
    tag: 'console',
    ok: {
      description: 'The sign-in options.',
      content: json(
        Type.Object(
          { providers: Type.Array(Type.String()), key_sign_in: Type.Boolean() },
          { additionalProperties: false },
        ),
      ),
    },
  },
  'POST /v1/svc/console/session': {
    operationId: 'consoleSignIn',
    summary: 'Key sign-in: sets the af_console cookie for the key’s tenant',
    tag: 'console',
    description:
      'The operator key signs in as operator of the default tenant, a tenant API key as that tenant’s admin; environment service keys cannot sign in. A key that does not resolve is 401 and counts as a failed authentication.',
    body: {
      schema: Type.Object(
        { api_key: Type.String({ minLength: 1, maxLength: 256 }) },
        { additionalProperties: true },
      ),
      required: true,
      example: { api_key: 'afk_example' },
    },
    ok: { description: 'Signed in; the cookie is set.', content: json(Me) },
    more: {
      401: { description: 'The key does not resolve.', content: json(ErrorBody) },
      429: {
        description: 'Too many failed authentications from this address or from all (Retry-After).',
        content: json(ErrorBody),
      },
    },
  },
  'GET /v1/svc/console/me': {
    operationId: 'consoleMe',
    summary: 'The signed-in console session: tenant, role, CSRF token',
    tag: 'console',
    description: cookieOnly,
    ok: { description: 'The console session.', content: json(Me) },
  },
  'POST /v1/svc/console/sign_out': {
    operationId: 'consoleSignOut',
    summary: 'Signs this console session out (the cookie is refused from now on)',
    tag: 'console',
    description: cookieOnly,
    ok: { description: 'Signed out.', content: json(SignedOut) },
  },
  'POST /v1/svc/console/sign_out_everywhere': {
    operationId: 'consoleSignOutEverywhere',
    summary: 'Signs out every console session of the signed-in principal',
    tag: 'console',
    description: cookieOnly,
    ok: { description: 'Signed out everywhere.', content: json(SignedOut) },
  },
};
