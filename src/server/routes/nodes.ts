import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { MessageResponse, Node, NodeDeleteBody, NodesQuery, Paginated } from '../../api/index.js';
// Response schemas: Fastify compiles each once at start-up (fast-json-stringify) and serialises
// every answer through it, instead of JSON.stringify per request.
import { RULES } from '../permissions.js';
import { deleteNode, listNodes, readNode } from '../services/fleet/nodes.js';
import { statusProblems } from '../services/logs/status-problems.js';
import { sendPage } from './cached-body.js';

const EnvParam = Type.Object({ env: Type.String() });

export function nodeRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/nodes/:env',
    { config: { rule: RULES.nodesList }, schema: { params: EnvParam, querystring: NodesQuery, response: { 200: Paginated(Node) } } },
    async (req, reply) => sendPage(reply, await listNodes(deps, envOf(req), req.query, callerOf(req).generations)),
  );
  app.get(
    '/api/v1/nodes/:env/node/:node',
    {
      config: { rule: RULES.nodeRead },
      schema: { params: Type.Object({ env: Type.String(), node: Type.String() }), response: { 200: Node } },
    },
    async (req) => {
      const node = await readNode(deps, callerOf(req), envOf(req), req.params.node);
      // Issue 30: osquery's last warnings and errors about this node, from its status log.
      return { ...node, status_problems: await statusProblems(deps.db, envOf(req).name, node.id) };
    },
  );
  app.post(
    '/api/v1/nodes/:env/delete',
    { config: { rule: RULES.nodeDelete }, schema: { params: EnvParam, body: NodeDeleteBody, response: { 200: MessageResponse } } },
    async (req) => ({ message: await deleteNode(deps, callerOf(req), envOf(req), req.body.uuid, req.ip) }),
  );
}
