// The typed resources of this API, one module per resource; a flavour replaces some methods
// (src/client/flavors/), never the shape.
import type { HttpClient } from '../http.js';
import { authApi } from './auth.js';
import { usersApi } from './users.js';
import { mfaApi } from './mfa.js';
import { environmentsApi } from './environments.js';
import { nodesApi } from './nodes.js';
import { tagsApi } from './tags.js';
import { settingsApi } from './settings.js';
import { carvesApi } from './carves.js';
import { sinksApi } from './sinks.js';
import { auditApi } from './audit.js';
import { statsApi } from './stats.js';
import { queriesApi } from './queries.js';
import { osqueryConfigApi } from './osquery-config.js';
import { serverApi } from './server.js';
import { logsApi } from './logs.js';

export function fleetResources(http: HttpClient) {
  return {
    auth: authApi(http),
    users: usersApi(http),
    mfa: mfaApi(http),
    environments: environmentsApi(http),
    nodes: nodesApi(http),
    tags: tagsApi(http),
    settings: settingsApi(http),
    carves: carvesApi(http),
    sinks: sinksApi(http),
    audit: auditApi(http),
    stats: statsApi(http),
    queries: queriesApi(http),
    config: osqueryConfigApi(http),
    server: serverApi(http),
    logs: logsApi(http),
  };
}
export type FleetResources = ReturnType<typeof fleetResources>;
