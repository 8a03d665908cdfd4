/**
 * OpenAPI entries of the integration routes (../routes/integrations.ts), under `/v1/svc` and
 * un-prefixed. test/e2e/api/openapi.test.ts fails when a route lacks an entry;
 * test/e2e/integrations/*.test.ts prove the behaviour.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { WEBHOOK_PATHS } from '@agentfleet/core';
import { ErrorBody, Id } from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'integrations';
const Str = Type.String();
const Nullable = (s: TSchema) => Type.Union([s, Type.Null()]);
const IntegrationIdParam = Type.Union(
  [Type.Literal('github'), Type.Literal('linear'), Type.Literal('slack')],
  { description: 'github, linear or slack' },
);
const Install = Type.Object(
  {
    id: Str,
    type: Type.Literal('integration_install'),
    integration: Str,
    external_id: Str,
    account: Type.Object({ id: Str, name: Str }),
    scopes: Type.Array(Str),
    created_at: Str,
    updated_at: Str,
  },
  { additionalProperties: false },
);
const Integration = Type.Object(
  {
    id: Str,
    type: Type.Literal('integration'),
    name: Str,
    configured: Type.Boolean(),
    missing_settings: Type.Array(Str),
    callback_url: Nullable(Str),
    webhook_url: Nullable(Str),
    installs: Type.Array(Install),
  },
  { additionalProperties: false },
);
const Trigger = Type.Union([
  Type.Literal('mention'),
  Type.Literal('assignment'),
  Type.Literal('label'),
  Type.Literal('direct_message'),
]);
const Publication = Type.Object(
  {
    id: Str,
    type: Type.Literal('integration_publication'),
    integration: Str,
    workspace: Type.Record(Str, Str),
    agent: Type.Object({ id: Str, version: Nullable(Type.Integer()) }),
    environment_id: Str,
    vault_ids: Type.Array(Str),
    triggers: Type.Array(Trigger),
    label: Nullable(Str),
    capabilities: Type.Array(Str),
    created_at: Str,
  },
  { additionalProperties: false },
);
const PublicationCreate = Type.Object(
  {
    agent: Type.Union([
      Str,
      Type.Object({
        type: Type.Optional(Type.Literal('agent')),
        id: Str,
        version: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
    ]),
    environment_id: Str,
    vault_ids: Type.Optional(Type.Array(Str, { maxItems: 20 })),
    workspace: Type.Optional(Type.Record(Str, Str)),
    triggers: Type.Optional(Type.Array(Trigger, { minItems: 1 })),
    label: Type.Optional(Nullable(Str)),
    capabilities: Type.Optional(
      Type.Array(
        Type.Union([
          Type.Literal('reply'),
          Type.Literal('pull_request'),
          Type.Literal('state_change'),
        ]),
        {
          description:
            'reply (default) for every integration; pull_request: GitHub only; state_change: Linear only',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
const html = { 'text/html': null };
const WebhookAnswer = Type.Union([
  Type.Object({ status: Str }, { additionalProperties: true }),
  Type.Object({ challenge: Str }, { additionalProperties: false }),
]);

function forBase(base: string, prefix: string): Record<string, OperationDoc> {
  const params = { id: IntegrationIdParam };
  return {
    [`GET ${base}`]: {
      operationId: `${prefix}ListIntegrations`,
      summary: "The shipped integrations and this tenant's installs",
      tag,
      ok: {
        description: 'Every integration, configured or not.',
        content: json(Type.Object({ data: Type.Array(Integration) })),
      },
    },
    [`GET ${base}/:id/install`]: {
      operationId: `${prefix}InstallIntegration`,
      summary: "Starts an install: the provider's authorize URL with a single-use state",
      description:
        'A 400 names the settings that are missing when the integration is not configured.',
      tag,
      params,
      ok: {
        description: 'Where to send the installing user.',
        content: json(
          Type.Object(
            {
              type: Type.Literal('integration_install_url'),
              integration: Str,
              url: Str,
              expires_at: Str,
            },
            { additionalProperties: false },
          ),
        ),
      },
    },
    [`GET ${base}/:id/callback`]: {
      operationId: `${prefix}IntegrationCallback`,
      summary: "The provider's OAuth return: records the install (an HTML page says what happened)",
      tag,
      params,
      query: Type.Object({
        code: Type.Optional(Str),
        state: Type.Optional(Str),
        error: Type.Optional(Str),
        installation_id: Type.Optional(Str),
        setup_action: Type.Optional(Str),
      }),
      ok: { description: 'Installed.', content: html },
      more: {
        400: {
          description: 'Not installed: the page says why.',
          content: { 'text/html': null, 'application/json': ErrorBody },
        },
      },
    },
    [`POST ${base}/:id/uninstall`]: {
      operationId: `${prefix}UninstallIntegration`,
      summary: 'Revokes the install at the provider and deletes its tokens',
      tag,
      params,
      body: {
        schema: Type.Object({ install_id: Type.Optional(Str) }, { additionalProperties: false }),
        example: {},
      },
      ok: {
        description:
          'Uninstalled (`revoked: false` when the provider refused; the tokens are gone here all the same).',
        content: json(
          Type.Object(
            {
              id: Str,
              type: Type.Literal('integration_uninstalled'),
              integration: Str,
              revoked: Type.Boolean(),
              revoke_error: Type.Optional(Str),
            },
            { additionalProperties: false },
          ),
        ),
      },
    },
    [`GET ${base}/:id/publications`]: {
      operationId: `${prefix}ListPublications`,
      summary: 'Which agents serve which workspaces of this integration',
      tag,
      params,
      ok: {
        description: 'The publications.',
        content: json(Type.Object({ data: Type.Array(Publication) })),
      },
    },
    [`POST ${base}/:id/publications`]: {
      operationId: `${prefix}CreatePublication`,
      summary: 'Publishes an agent to a workspace',
      tag,
      params,
      body: {
        schema: PublicationCreate,
        required: true,
        example: {
          agent: 'agent_01example',
          environment_id: 'env_01example',
          workspace: { owner: 'acme' },
        },
      },
      ok: { description: 'The publication.', content: json(Publication) },
    },
    [`DELETE ${base}/:id/publications/:pub_id`]: {
      operationId: `${prefix}DeletePublication`,
      summary: 'Deletes a publication (its threads stop getting new sessions)',
      tag,
      params: { ...params, pub_id: Id('pub_') },
      ok: {
        description: 'Deleted.',
        content: json(
          Type.Object(
            { id: Str, type: Type.Literal('integration_publication_deleted') },
            { additionalProperties: false },
          ),
        ),
      },
    },
    ...Object.fromEntries(
      (
        [
          ['github', 'X-Hub-Signature-256'],
          ['linear', 'Linear-Signature and webhookTimestamp'],
          ['slack', 'X-Slack-Signature over v0:{timestamp}:{body}'],
        ] as const
      ).map(([id, scheme]) => [
        `POST ${base}/${id}/${WEBHOOK_PATHS[id]}`,
        {
          operationId: `${prefix}${id[0]!.toUpperCase()}${id.slice(1)}Webhook`,
          summary: `Inbound ${id} webhook (signed: ${scheme})`,
          description:
            'No API key: the signature is the authentication. 202 accepted (handled from the bus), 200 duplicate/ignored/challenge; 401 bad or stale signature; 429 over the per-address or per-tenant budget.',
          tag,
          body: { schema: Type.Unknown(), example: {} },
          ok: { status: 202, description: 'Accepted.', content: json(WebhookAnswer) },
          more: {
            200: {
              description: 'A duplicate, ignored event, or a challenge answer.',
              content: json(WebhookAnswer),
            },
            401: { description: 'Missing, wrong or stale signature.', content: json(ErrorBody) },
            429: { description: 'Over a webhook budget (retry-after).', content: json(ErrorBody) },
          },
        } satisfies OperationDoc,
      ]),
    ),
  };
}

export const INTEGRATION_OPERATIONS: Record<string, OperationDoc> = {
  ...forBase('/v1/svc/integrations', 'svc'),
  ...forBase('/v1/integrations', 'vendor'),
};
