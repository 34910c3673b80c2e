// The typed API: one method per endpoint, grouped by resource, over the one HttpClient.
import { HttpClient, type HttpOptions } from './http.js';
import { authApi } from './resources/auth.js';
import { usersApi } from './resources/users.js';
import { mfaApi } from './resources/mfa.js';
import { environmentsApi } from './resources/environments.js';
import { nodesApi } from './resources/nodes.js';
import { tagsApi } from './resources/tags.js';
import { settingsApi } from './resources/settings.js';
import { carvesApi } from './resources/carves.js';
import { sinksApi } from './resources/sinks.js';
import { auditApi } from './resources/audit.js';
import { statsApi } from './resources/stats.js';
import { queriesApi } from './resources/queries.js';

export class FleetApi {
  readonly auth;
  readonly users;
  readonly mfa;
  readonly environments;
  readonly nodes;
  readonly tags;
  readonly settings;
  readonly carves;
  readonly sinks;
  readonly audit;
  readonly stats;
  readonly queries;

  constructor(readonly http: HttpClient) {
    this.auth = authApi(http);
    this.users = usersApi(http);
    this.mfa = mfaApi(http);
    this.environments = environmentsApi(http);
    this.nodes = nodesApi(http);
    this.tags = tagsApi(http);
    this.settings = settingsApi(http);
    this.carves = carvesApi(http);
    this.sinks = sinksApi(http);
    this.audit = auditApi(http);
    this.stats = statsApi(http);
    this.queries = queriesApi(http);
  }

  static create(opts: HttpOptions): FleetApi {
    return new FleetApi(new HttpClient(opts));
  }
}

export { HttpClient, type HttpOptions } from './http.js';
export { paginate } from './paginate.js';
