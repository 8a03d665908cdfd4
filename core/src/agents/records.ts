/** Agents and their versions as stored. */
import type { AgentSpec } from '@agentfleet/schemas';

export interface AgentDoc {
  _id: string;
  tenant_id: string;
  version: number;
  spec: AgentSpec;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AgentVersionDoc {
  _id: string;
  tenant_id: string;
  agent_id: string;
  version: number;
  spec: AgentSpec;
  created_at: string;
}
