import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { App } from './request.js';
import type { Deps } from '../context.js';
import { HttpError } from '../errors.js';
import { RULES } from '../permissions.js';
import { ServerVersion } from '../../api/index.js';
import { SERVER_VERSION, appliedSchema } from '../version.js';
import { serviceMetrics } from '../services/environments/settings-values.js';

/**
 * GET /healthz for a load balancer: 200 while this replica serves, reaches its database and can
 * write to it; 503 when the database does not answer, when it is out of space (writes would be
 * refused: SQLite's file system or page limit, checked on every call; on PostgreSQL, a write
 * refused for space in the last seconds), and (from the onRequest hook) while it drains on
 * SIGTERM, so the balancer stops sending it new requests. No authentication, no rate limit, no audit.
 */
export function healthRoutes(app: App, deps: Deps): void {
  app.get(
    '/healthz',
    {
      config: { rule: RULES.health },
      schema: { response: { 200: Type.Object({ status: Type.Literal('ok'), database: Type.String(), version: Type.String() }) } },
    },
    async () => {
      try {
        await sql`select 1`.execute(deps.db);
      } catch {
        throw new HttpError(503, 'unavailable', 'the database does not answer');
      }
      const full = deps.outOfSpace
        ? await deps.outOfSpace().catch(() => undefined)
        : deps.faults.recentlyOutOfSpace()
          ? 'a write was refused for lack of space'
          : undefined;
      if (full) throw new HttpError(503, 'unavailable', `the database is out of space (${full}): writes are refused, reads still work`);
      return { status: 'ok' as const, database: deps.dialect, version: SERVER_VERSION };
    },
  );
}

/** GET /api/v1/version (issue 27): the release, schema and database of this server, for any signed-in user. */
export function versionRoutes(app: App, deps: Deps): void {
  app.get('/api/v1/version', { config: { rule: RULES.version }, schema: { response: { 200: ServerVersion } } }, async () => ({
    version: SERVER_VERSION,
    schema: await appliedSchema(deps.db),
    database: deps.dialect,
    node: process.version,
  }));
}

/**
 * GET /metrics: Prometheus' text format (lib/metrics.ts), for super-admins (Prometheus sends the
 * token as `authorization: Bearer ...`), when the setting api/service_metrics is on (off by
 * default, as seeded; read once per settings change). --metrics-listen, an operator's explicit
 * choice on the command line, serves the same without a token on a listener of its own.
 */
export function metricsRoutes(app: App, deps: Deps): void {
  app.get('/metrics', { config: { rule: RULES.metrics } }, async (req, reply) => {
    if (!deps.metrics) throw new HttpError(404, 'not_found', 'metrics are not collected by this server');
    if (!(await serviceMetrics(deps, req.caller?.generations?.config))) {
      throw new HttpError(
        404,
        'not_found',
        'metrics are off on this API: fleetctl settings set api service_metrics true (or serve them with --metrics-listen)',
      );
    }
    const text = await deps.metrics.text();
    return reply.type(deps.metrics.contentType).send(text);
  });
}
