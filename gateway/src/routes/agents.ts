import type { FastifyInstance } from 'fastify';
import {
  AgentCreate,
  AgentListQuery,
  AgentRetrieveQuery,
  AgentUpdate,
  VersionListQuery,
} from '@agentfleet/schemas';
import type { GatewayServices } from '../services.js';
import { bodyOf, queryOf, tenantOf } from '../http.js';

const createBody = bodyOf(AgentCreate);
const updateBody = bodyOf(AgentUpdate);
const listQuery = queryOf(AgentListQuery);
const getQuery = queryOf(AgentRetrieveQuery);
const versionsQuery = queryOf(VersionListQuery);
/** fastify's content-type for a serialized object. */
const JSON_UTF8 = 'application/json; charset=utf-8';

/** Spec paths plus the SDK's (POST for update, POST …/archive, ?version= on retrieve). */
export function agentRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'agents'>) {
  app.post('/v1/agents', async (req, reply) =>
    reply.code(200).send(await p.agents.create(tenantOf(req), createBody(req))),
  );
  app.get('/v1/agents', async (req) => p.agents.list(tenantOf(req), listQuery(req)));
  // A frozen agent (rendered from the agent cache, unchanging) is serialized once: the same
  // bytes and content-type fastify's default serializer gives (test/e2e/agents/agent-cache.test.ts).
  const serialized = new WeakMap<object, string>();
  app.get<{ Params: { id: string } }>('/v1/agents/:id', async (req, reply) => {
    const agent = await p.agents.get(tenantOf(req), req.params.id, getQuery(req).version);
    if (!Object.isFrozen(agent)) return agent;
    let json = serialized.get(agent);
    if (json === undefined) serialized.set(agent, (json = JSON.stringify(agent)));
    return reply.type(JSON_UTF8).send(json);
  });
  app.get<{ Params: { id: string } }>('/v1/agents/:id/versions', async (req) =>
    p.agents.listVersions(tenantOf(req), req.params.id, versionsQuery(req)),
  );
  app.get<{ Params: { id: string; version: string } }>(
    '/v1/agents/:id/versions/:version',
    async (req) => {
      const v = Number(req.params.version);
      if (!Number.isInteger(v) || v < 1) {
        await p.agents.getDoc(tenantOf(req), req.params.id); // 404 for a foreign or unknown agent first
        throw Object.assign(new Error('version: must be a positive integer'), {
          statusCode: 400,
          field: 'version',
        });
      }
      return p.agents.getVersion(tenantOf(req), req.params.id, v);
    },
  );
  const update = async (req: any) => p.agents.update(tenantOf(req), req.params.id, updateBody(req));
  app.patch<{ Params: { id: string } }>('/v1/agents/:id', update);
  app.post<{ Params: { id: string } }>('/v1/agents/:id', update);
  const archive = async (req: any) => p.agents.archive(tenantOf(req), req.params.id);
  app.delete<{ Params: { id: string } }>('/v1/agents/:id', archive);
  app.post<{ Params: { id: string } }>('/v1/agents/:id/archive', archive);
}
