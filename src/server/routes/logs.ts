// Issue 30: log lines (GET /api/v1/logs/{env}, following by long polling) and query reports
// (GET /api/v1/reports/{env}[/{name}]). Rules in services/logs/; docs/api.md "Logs and query reports".
import { Type } from '@sinclair/typebox';
import { envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { RULES } from '../permissions.js';
import { LogsQuery, ReportQuery, ReportSummary } from '../../api/index.js';
import { parseLogQuery, readLines, waitForLines } from '../services/logs/lines.js';
import { reportList, reportPage } from '../services/logs/reports.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function logsRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/logs/:env',
    { config: { rule: RULES.logsRead }, schema: { params: Type.Object({ env: Type.String() }), querystring: LogsQuery } },
    async (req, reply) => {
      const env = envOf(req);
      const f = await parseLogQuery(deps, env, req.query);
      let page = await readLines(deps.db, env, f);
      if (f.waitMs > 0 && page.count === 0 && page.nextCursor === null) {
        // Waiting holds a connection, not work: its slot in the admin budget goes back.
        req.leaveBudget?.();
        const gone = new AbortController();
        reply.raw.once('close', () => gone.abort());
        page = await waitForLines(deps, env, f, page, gone.signal);
      }
      return reply.type(JSON_TYPE).send(page.text);
    },
  );
  app.get(
    '/api/v1/reports/:env',
    {
      config: { rule: RULES.logsRead },
      schema: { params: Type.Object({ env: Type.String() }), response: { 200: Type.Array(ReportSummary) } },
    },
    async (req) => reportList(deps, envOf(req)),
  );
  app.get(
    '/api/v1/reports/:env/:name',
    {
      config: { rule: RULES.logsRead },
      schema: { params: Type.Object({ env: Type.String(), name: Type.String() }), querystring: ReportQuery },
    },
    async (req, reply) => reply.type(JSON_TYPE).send(await reportPage(deps, envOf(req), req.params.name, req.query)),
  );
}
