// The typed API: one method per endpoint, grouped by resource, over the one HttpClient.
import { HttpClient, type HttpOptions } from './http.js';
import { need, traits, type Feature, type ServerFlavor, type Traits } from './flavors/index.js';
import type { osctrlResources } from './flavors/osctrl/index.js';
import { fleetResources, type FleetResources } from './resources/index.js';

export type { FleetResources } from './resources/index.js';

export class FleetApi {
  readonly auth: FleetResources['auth'];
  readonly users: FleetResources['users'];
  readonly mfa: FleetResources['mfa'];
  readonly environments: FleetResources['environments'];
  readonly nodes: FleetResources['nodes'];
  readonly tags: FleetResources['tags'];
  readonly settings: FleetResources['settings'];
  readonly carves: FleetResources['carves'];
  readonly sinks: FleetResources['sinks'];
  readonly audit: FleetResources['audit'];
  readonly stats: FleetResources['stats'];
  readonly queries: FleetResources['queries'];
  readonly config: FleetResources['config'];
  readonly server: FleetResources['server'];
  readonly logs: FleetResources['logs'];

  /** `osctrl`: the osctrl flavour's resources, which FleetApi.over loads only for that flavour. */
  private constructor(
    readonly http: HttpClient,
    readonly flavor: ServerFlavor,
    osctrl?: typeof osctrlResources,
  ) {
    const base = fleetResources(http);
    const r: FleetResources = osctrl ? { ...base, ...osctrl(http, base) } : base;
    this.auth = r.auth;
    this.users = r.users;
    this.mfa = r.mfa;
    this.environments = r.environments;
    this.nodes = r.nodes;
    this.tags = r.tags;
    this.settings = r.settings;
    this.carves = r.carves;
    this.sinks = r.sinks;
    this.audit = r.audit;
    this.stats = r.stats;
    this.queries = r.queries;
    this.config = r.config;
    this.server = r.server;
    this.logs = r.logs;
  }

  /** Refuses (exit 8) before any request when this server lacks the feature (src/client/flavors). */
  need(feature: Feature): void {
    need(this.flavor, feature);
  }

  /** How this server behaves where a command must say something else (src/client/flavors). */
  get traits(): Traits {
    return traits(this.flavor);
  }

  /**
   * A client over `http` for a server of this flavour. The osctrl flavour's modules (a fifth of
   * what a command against the reference server would otherwise load) are loaded only for it.
   */
  static async over(http: HttpClient, flavor: ServerFlavor = 'fleet'): Promise<FleetApi> {
    const osctrl = flavor === 'osctrl' ? (await import('./flavors/osctrl/index.js')).osctrlResources : undefined;
    return new FleetApi(http, flavor, osctrl);
  }

  static create(opts: HttpOptions, flavor: ServerFlavor = 'fleet'): Promise<FleetApi> {
    return FleetApi.over(new HttpClient(opts), flavor);
  }
}

export { HttpClient, type HttpOptions } from './http.js';
export { pages, paginate } from './paginate.js';
export { detectFlavor, parseFlavor, ServerFlavors, NotSupportedError, type Feature, type ServerFlavor } from './flavors/index.js';
