// osctrl 0.5.4 (github.com/jmpsec/osctrl) speaks the paths of this API with other shapes and
// parameters. This is the one place that knows: requests are mapped, answers normalised into the
// src/api shapes (then checked against them), and what osctrl lacks is refused before any
// request. Wire facts are from a real osctrl-api, osctrl-tls and osctrl-cli built at commit
// 3c1c5ab4, with agents enrolled (recorded in test/fixtures/osctrl/, docs/osctrl.md).
import type { HttpClient } from '../../http.js';
import type { FleetResources } from '../../resources/index.js';
import { osctrlSession } from './session.js';
import { osctrlConfig } from './config.js';
import { authResource } from './auth.js';
import { usersResource } from './users.js';
import { mfaResource } from './mfa.js';
import { environmentsResource } from './environments.js';
import { nodesResource } from './nodes.js';
import { tagsResource } from './tags.js';
import { settingsResource } from './settings.js';
import { carvesResource } from './carves.js';
import { queriesResource } from './queries.js';
import { sinksResource } from './sinks.js';
import { auditResource } from './audit.js';
import { logsResource } from './logs.js';

/** The fleet resources with osctrl's differences: one module per resource, sharing one session per command. */
export function osctrlResources(http: HttpClient, base: FleetResources) {
  const s = osctrlSession(http, base);
  return {
    auth: authResource(s),
    users: usersResource(s),
    mfa: mfaResource(s),
    environments: environmentsResource(s),
    nodes: nodesResource(s),
    tags: tagsResource(s),
    settings: settingsResource(s),
    carves: carvesResource(s),
    queries: queriesResource(s),
    sinks: sinksResource(s),
    audit: auditResource(s),
    logs: logsResource(s),
    // Issue 22: GET/PATCH /api/v1/environments/config/{env} (config.ts).
    config: osctrlConfig(http),
  };
}
