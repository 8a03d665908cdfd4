/**
 * Integration records (core/src/integrations). Tenant-scoped: installs, publications and
 * threads. In the control store (an inbound webhook and an OAuth callback name no tenant):
 * pending install states, the route from a provider account to its tenant, and the delivery
 * ids seen (de-duplication).
 *
 * Provider tokens are sealed under the root secret (SecretBox, purpose `installTokenPurpose`),
 * never served, never in an event or a log.
 */
import type { IntegrationId, Trigger } from './port.js';

export interface InstallDoc {
  _id: string; // inst_…
  tenant_id: string;
  integration: IntegrationId;
  external_id: string;
  account: { id: string; name: string };
  /** Sealed {access_token, refresh_token} JSON; null for GitHub (tokens minted per use). */
  sealed_tokens: string | null;
  expires_at: string | null;
  scopes: string[];
  data: Record<string, string>;
  /** Who installed: a console user id, or the API key id. */
  installed_by: string;
  created_at: string;
  updated_at: string;
}

export interface PublicationDoc {
  _id: string; // pub_…
  tenant_id: string;
  integration: IntegrationId;
  /** Where: every key must equal the event's (github {owner, repo?}; linear {team_id?|team_key?}; slack {channel?}). */
  workspace: Record<string, string>;
  agent: { id: string; version: number | null };
  environment_id: string;
  vault_ids: string[];
  triggers: Trigger[];
  /** With the `label` trigger: the label that starts a session. */
  label: string | null;
  capabilities: string[];
  created_at: string;
}

/** One conversation on the provider (issue, PR, Slack thread) and the session that serves it. */
export interface ThreadDoc {
  _id: string; // `${integration}:${install_id}:${sha256(thread key)}`
  tenant_id: string;
  integration: IntegrationId;
  install_id: string;
  publication_id: string;
  key: string;
  target: Record<string, string>;
  session_id: string;
  /** Seq of the last event whose agent messages were posted back. */
  replied_seq: number;
  /** Delivery ids already turned into a user.message (a redelivered command adds nothing). */
  deliveries: string[];
  created_at: string;
  updated_at: string;
}

/** A pending install: the OAuth `state` (its `_id`), single use, bound to tenant and installer. */
export interface InstallStateDoc {
  _id: string;
  tenant_id: string;
  integration: IntegrationId;
  installed_by: string;
  expires_at: number;
}

/** `${integration}:${external_id}` → the tenant and install it belongs to. */
export interface InstallRouteDoc {
  _id: string;
  tenant_id: string;
  install_id: string;
}

/** `${integration}:${delivery id}`, kept DELIVERY_TTL_MS. */
export interface SeenDeliveryDoc {
  _id: string;
  expires_at: number;
}

export const installTokenPurpose = (installId: string) => `integration-install-tokens:${installId}`;
export const routeId = (integration: IntegrationId, externalId: string) =>
  `${integration}:${externalId}`;

export function renderInstall(d: InstallDoc) {
  return {
    id: d._id,
    type: 'integration_install' as const,
    integration: d.integration,
    external_id: d.external_id,
    account: d.account,
    scopes: d.scopes,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

export function renderPublication(d: PublicationDoc) {
  return {
    id: d._id,
    type: 'integration_publication' as const,
    integration: d.integration,
    workspace: d.workspace,
    agent: d.agent,
    environment_id: d.environment_id,
    vault_ids: d.vault_ids,
    triggers: d.triggers,
    label: d.label,
    capabilities: d.capabilities,
    created_at: d.created_at,
  };
}
