// One module per resource group; each registers its routes with their permission rule.
import type { App } from './request.js';
import type { Deps } from '../context.js';
import { authRoutes } from './auth.js';
import { usersRoutes } from './users.js';
import { mfaRoutes } from './mfa.js';
import { environmentRoutes } from './environments.js';
import { enrollRoutes } from './enroll.js';
import { tagsRoutes } from './tags.js';
import { nodeRoutes } from './nodes.js';
import { settingsRoutes } from './settings.js';
import { carvesRoutes } from './carves.js';
import { sinksRoutes } from './sinks.js';
import { auditRoutes } from './audit.js';
import { statsRoutes } from './stats.js';
import { errorRoutes } from './error.js';
import { queriesRoutes } from './queries.js';
import { healthRoutes, metricsRoutes, versionRoutes } from './health.js';
import { osqueryConfigRoutes } from './osquery-config.js';
import { logsRoutes } from './logs.js';

export async function registerRoutes(app: App, deps: Deps): Promise<void> {
  for (const register of [
    authRoutes,
    usersRoutes,
    mfaRoutes,
    environmentRoutes,
    enrollRoutes,
    tagsRoutes,
    nodeRoutes,
    settingsRoutes,
    carvesRoutes,
    sinksRoutes,
    auditRoutes,
    statsRoutes,
    errorRoutes,
    queriesRoutes,
    healthRoutes,
    metricsRoutes,
    osqueryConfigRoutes,
    versionRoutes,
    logsRoutes,
  ])
    register(app, deps);
}
