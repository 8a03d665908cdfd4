/**
 * OpenAPI entries of the webhook endpoint routes (gateway/src/routes/webhookEndpoints.ts).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import {
  Deleted,
  Id,
  ListPage,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointCreate,
  WebhookEndpointListQuery,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'webhooks';
const params = { id: Id('whep_') };
const BASE = '/v1/svc/webhook_endpoints';
const one = { description: 'The endpoint (no secret).', content: json(WebhookEndpoint) };
const withSecret = {
  description: 'The endpoint and its `secret` (`whsec_…`), served this once.',
  content: json(WebhookEndpointWithSecret),
};
const update = {
  schema: WebhookEndpointUpdate,
  required: true,
  example: { description: 'renamed', disabled: false },
};

export const WEBHOOK_OPERATIONS: Record<string, OperationDoc> = {
  [`POST ${BASE}`]: {
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint',
    description:
      'https only, except hosts the operator opened with EGRESS_ALLOW_PRIVATE_HOSTS; `event_types` empty means every type.',
    tag,
    body: {
      schema: WebhookEndpointCreate,
      required: true,
      example: {
        url: 'https://hooks.example.com/agentfleet',
        event_types: ['session.status_idled'],
      },
    },
    ok: withSecret,
  },
  [`GET ${BASE}`]: {
    operationId: 'listWebhookEndpoints',
    summary: 'List webhook endpoints',
    tag,
    query: WebhookEndpointListQuery,
    ok: { description: 'A page of endpoints.', content: json(ListPage(WebhookEndpoint)) },
  },
  [`GET ${BASE}/:id`]: {
    operationId: 'getWebhookEndpoint',
    summary: 'Retrieve a webhook endpoint',
    tag,
    params,
    ok: one,
  },
  [`POST ${BASE}/:id`]: {
    operationId: 'updateWebhookEndpoint',
    summary: 'Update a webhook endpoint (`disabled: false` re-enables it)',
    tag,
    params,
    body: update,
    ok: one,
  },
  [`PATCH ${BASE}/:id`]: {
    operationId: 'patchWebhookEndpoint',
    summary: 'Update a webhook endpoint',
    tag,
    params,
    body: update,
    ok: one,
  },
  [`DELETE ${BASE}/:id`]: {
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint',
    tag,
    params,
    ok: { description: 'Deleted.', content: json(Deleted('webhook_endpoint_deleted')) },
  },
  [`POST ${BASE}/:id/rotate_secret`]: {
    operationId: 'rotateWebhookEndpointSecret',
    summary: 'Replace the signing secret (the new one is served this once)',
    tag,
    params,
    ok: withSecret,
  },
  [`GET ${BASE}/:id/deliveries`]: {
    operationId: 'listWebhookDeliveries',
    summary: "List an endpoint's deliveries (state, attempts, last status or error)",
    tag,
    params,
    query: WebhookEndpointListQuery,
    ok: {
      description: 'A page of deliveries, newest first.',
      content: json(ListPage(WebhookDelivery)),
    },
  },
};
