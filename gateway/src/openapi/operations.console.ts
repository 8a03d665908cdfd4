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
const Member = Type.Object(
  {
    user_id: Type.String(),
    email: Type.Union([Type.String(), Type.Null()]),
    name: Type.Union([Type.String(), Type.Null()]),
    role: Role,
    created_at: Type.String(),
  },
  { additionalProperties: false },
);
const Invitation = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: Role,
    created_at: Type.String(),
    expires_at: Type.String(),
    accepted_at: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);
const Policy = Type.Object(
  { allowed_email_domains: Type.Array(Type.String()), default_role: Role },
  { additionalProperties: false },
);
const Deleted = (idField: string) =>
  Type.Object(
    { [idField]: Type.String(), deleted: Type.Literal(true) },
    { additionalProperties: false },
  );
const TenantQuery = Type.Object({
  tenant_id: Type.Optional(
    Type.String({ description: 'Operator key only: the tenant to act on (default: your own).' }),
  ),
});
const adminWrites =
  'Reads: any role of the tenant or its API keys. Writes: a console admin, a tenant API key or the operator key (the member and viewer roles are 403).';
const html = { 'text/html': null };
const oauthParams = {
  provider: Type.String({ minLength: 1, description: '`oidc` or `github`.' }),
};
const oauthOps = (base: string, prefix: string): Record<string, OperationDoc> => ({
  [`GET ${base}/:provider/authorize`]: {
    operationId: `${prefix}OAuthAuthorize`,
    summary: 'Starts console sign-in at an identity provider (redirect)',
    tag: 'console',
    description:
      'Sets the short-lived af_sign_in cookie (PKCE verifier, state, nonce; encrypted) and redirects to the provider. `return_to` may name a /console/ path.',
    params: oauthParams,
    query: Type.Object({ return_to: Type.Optional(Type.String()) }),
    ok: { status: 302, description: "Redirect to the provider's authorize URL.", content: {} },
    more: {
      502: { description: 'The provider could not be discovered or reached.', content: html },
    },
  },
  [`GET ${base}/:provider/callback`]: {
    operationId: `${prefix}OAuthCallback`,
    summary: "The identity provider's return: signs in and redirects to the console",
    tag: 'console',
    description:
      'Checks the af_sign_in cookie, state (once), PKCE and the ID token (issuer, audience, expiry, signature, nonce); admits members, invited emails and allowed domains; sets af_console.',
    params: oauthParams,
    query: Type.Object({
      code: Type.Optional(Type.String()),
      state: Type.Optional(Type.String()),
      error: Type.Optional(Type.String()),
    }),
    ok: { status: 302, description: 'Signed in: redirect to the console.', content: {} },
    more: {
      400: {
        description: 'The sign-in was refused (an HTML page says why), or the console is off.',
        content: { 'text/html': null, 'application/json': ErrorBody },
      },
      403: { description: 'Not a member: an HTML page; nothing was created.', content: html },
    },
  },
});
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
          {
            enabled: Type.Boolean(),
            providers: Type.Array(
              Type.Object({ id: Type.String(), name: Type.String(), authorize_url: Type.String() }),
            ),
            key_sign_in: Type.Boolean(),
          },
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
  'POST /v1/svc/console/switch_tenant': {
    operationId: 'consoleSwitchTenant',
    summary: "Moves the signed-in user's console session to another tenant they are a member of",
    tag: 'console',
    description: cookieOnly,
    body: {
      schema: Type.Object({ tenant_id: Type.String({ minLength: 1 }) }),
      required: true,
      example: { tenant_id: 'tnt_example' },
    },
    ok: { description: 'The console session, now in that tenant.', content: json(Me) },
  },
  'GET /v1/svc/console/members': {
    operationId: 'consoleMembers',
    summary: "The tenant's console members and their roles",
    tag: 'console',
    description: adminWrites,
    query: TenantQuery,
    ok: { description: 'The members.', content: json(Type.Object({ data: Type.Array(Member) })) },
  },
  'PATCH /v1/svc/console/members/:user_id': {
    operationId: 'consoleMemberUpdate',
    summary: "Changes a member's role (the tenant keeps one admin at least)",
    tag: 'console',
    description: adminWrites,
    params: { user_id: Type.String({ pattern: '^usr_' }) },
    query: TenantQuery,
    body: {
      schema: Type.Object({ role: Role, tenant_id: Type.Optional(Type.String()) }),
      required: true,
      example: { role: 'viewer' },
    },
    ok: { description: 'The member.', content: json(Member) },
    conflict: true,
  },
  'DELETE /v1/svc/console/members/:user_id': {
    operationId: 'consoleMemberDelete',
    summary: 'Removes a member from the tenant (their console sessions there end at once)',
    tag: 'console',
    description: adminWrites,
    params: { user_id: Type.String({ pattern: '^usr_' }) },
    query: TenantQuery,
    ok: { description: 'Removed.', content: json(Deleted('user_id')) },
    conflict: true,
  },
  'GET /v1/svc/console/invitations': {
    operationId: 'consoleInvitations',
    summary: "The tenant's invitations",
    tag: 'console',
    description: adminWrites,
    query: TenantQuery,
    ok: {
      description: 'The invitations.',
      content: json(Type.Object({ data: Type.Array(Invitation) })),
    },
  },
  'POST /v1/svc/console/invitations': {
    operationId: 'consoleInvite',
    summary: 'Invites an email to the tenant with a role (accepted at its first verified sign-in)',
    tag: 'console',
    description: adminWrites,
    query: TenantQuery,
    body: {
      schema: Type.Object({
        email: Type.String({ format: 'email' }),
        role: Type.Optional(Role),
        tenant_id: Type.Optional(Type.String()),
      }),
      required: true,
      example: { email: 'alice@example.com', role: 'member' },
    },
    ok: { description: 'The invitation.', content: json(Invitation) },
  },
  'DELETE /v1/svc/console/invitations/:id': {
    operationId: 'consoleInvitationDelete',
    summary: 'Withdraws an invitation',
    tag: 'console',
    description: adminWrites,
    params: { id: Type.String({ pattern: '^inv_' }) },
    query: TenantQuery,
    ok: { description: 'Withdrawn.', content: json(Deleted('id')) },
  },
  'GET /v1/svc/console/sign_in_policy': {
    operationId: 'consoleSignInPolicy',
    summary: "The tenant's allowed email domains and the role they join with",
    tag: 'console',
    description: adminWrites,
    query: TenantQuery,
    ok: { description: 'The policy.', content: json(Policy) },
  },
  'PUT /v1/svc/console/sign_in_policy': {
    operationId: 'consoleSignInPolicyUpdate',
    summary: 'Replaces the allowed email domains (a verified email there joins with default_role)',
    tag: 'console',
    description: adminWrites,
    query: TenantQuery,
    body: {
      schema: Type.Object({
        allowed_email_domains: Type.Array(Type.String(), { maxItems: 20 }),
        default_role: Type.Optional(Role),
        tenant_id: Type.Optional(Type.String()),
      }),
      required: true,
      example: { allowed_email_domains: ['example.com'], default_role: 'member' },
    },
    ok: { description: 'The policy.', content: json(Policy) },
  },
  'GET /v1/svc/tenants': {
    operationId: 'listTenants',
    summary: 'The tenants of this deployment (operator key only)',
    tag: 'admin',
    query: Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
      after_id: Type.Optional(Type.String()),
    }),
    ok: {
      description: 'A page of tenants by id.',
      content: json(
        Type.Object({
          data: Type.Array(
            Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String() }),
          ),
          has_more: Type.Boolean(),
          first_id: Type.Union([Type.String(), Type.Null()]),
          last_id: Type.Union([Type.String(), Type.Null()]),
        }),
      ),
    },
  },
  ...oauthOps('/v1/svc/oauth', 'svc'),
  ...oauthOps('/v1/oauth', 'vendor'),
};
