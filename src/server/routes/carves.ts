// Carves: list (contract.md 5), read (4.16) and actions (4.17); rules live in services/carves.ts.
import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { CarveDetail, CarvesListQuery, MessageResponse, Paginated, CarveQuery } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { carveAction, listCarves, readCarve } from '../services/agents/carves.js';

export function carvesRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/carves/:env',
    {
      config: { rule: RULES.carveRead },
      schema: { params: Type.Object({ env: Type.String() }), querystring: CarvesListQuery, response: { 200: Paginated(CarveQuery) } },
    },
    async (req) => listCarves(deps, envOf(req), req.query),
  );
  app.get(
    '/api/v1/carves/:env/:name',
    {
      config: { rule: RULES.carveRead },
      schema: { params: Type.Object({ env: Type.String(), name: Type.String() }), response: { 200: CarveDetail } },
    },
    async (req) => readCarve(deps, envOf(req), req.params.name),
  );
  // No body: anything sent is ignored, so `curl -X POST` and clients that send `{}` both work.
  app.post(
    '/api/v1/carves/:env/:action/:name',
    {
      config: { rule: RULES.carveAction },
      schema: {
        params: Type.Object({ env: Type.String(), action: Type.String(), name: Type.String() }),
        response: { 200: MessageResponse },
      },
    },
    async (req) => ({ message: await carveAction(deps, callerOf(req), envOf(req), req.params.action, req.params.name, req.ip) }),
  );
}
