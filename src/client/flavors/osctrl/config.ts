// An environment's osquery configuration on osctrl 0.5.4 (issue 22): osctrl keeps the same five
// parts as JSON texts and serves them at GET/PATCH /api/v1/environments/config/{env} (env admin,
// each part a string; a PATCH with some parts replaces those, checked only as JSON). osctrl-tls
// sends agents the environment's `configuration`, the parts assembled when they change.
// Differences from this API, made up here: the hash is fleetctl's SHA-256 of that configuration
// text (osctrl has none); If-Match is checked by reading first (osctrl has no conditional write);
// a dry run is answered here, after the same checks, without a request that changes anything
// (osctrl has none); osctrl checks nothing but JSON, so the commands' own checks are the only ones.
import { Type } from '../../../api/type.js';
import {
  CONFIG_PARTS,
  Environment,
  type AgentConfigView,
  type ConfigPart,
  type OsqueryConfigParts,
  type OsqueryConfigView,
} from '../../../api/index.js';
import { ApiError } from '../../../errors.js';
import type { HttpClient } from '../../http.js';
import { UnexpectedAnswerError, checkAnswer } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { WriteOptions } from '../../resources/osquery-config.js';

const seg = encodeURIComponent;

/** osctrl's EnvConfigResponse: each part (and the flags) as a JSON text. */
const RawConfig = Type.Object({
  options: Type.String(),
  schedule: Type.String(),
  packs: Type.String(),
  decorators: Type.String(),
  atc: Type.String(),
});

// node:crypto when a configuration is hashed, not with the flavour every osctrl command loads.
const hashOf = async (text: string) => (await import('node:crypto')).createHash('sha256').update(text).digest('hex');

export function osctrlConfig(http: HttpClient): FleetResources['config'] {
  const environment = (env: string) => http.request<Environment>('GET', `api/v1/environments/${seg(env)}`, { schema: Environment });
  // Loaded when used: every osctrl command loads this flavour, few of them touch the configuration.
  const lib = () => import('../../../lib/osquery-config.js');
  const read = async (env: string) => {
    const { readStoredParts } = await lib();
    const [parts, e] = await Promise.all([
      http
        .request<unknown>('GET', `api/v1/environments/config/${seg(env)}`)
        .then((raw) => checkAnswer<Record<ConfigPart, string>>(RawConfig, raw, 'config')),
      environment(env),
    ]);
    const config = readStoredParts(parts);
    return { config, name: e.name, updated: e.updated_at, hash: await hashOf(e.configuration) };
  };
  const view = (r: Awaited<ReturnType<typeof read>>, parts: readonly ConfigPart[] = CONFIG_PARTS): OsqueryConfigView => {
    const v: OsqueryConfigView = { environment: r.name, hash: r.hash, updated_at: r.updated };
    for (const p of parts) (v as Record<string, unknown>)[p] = r.config[p];
    return v;
  };
  const patch = async (env: string, parts: Partial<OsqueryConfigParts>, o: WriteOptions = {}): Promise<OsqueryConfigView> => {
    const before = await read(env);
    if (o.ifMatch && o.ifMatch !== before.hash) {
      throw new ApiError(
        409,
        'conflict',
        `the configuration of ${before.name} changed since it was read (hash ${o.ifMatch.slice(0, 12)}, now ${before.hash.slice(0, 12)}); read it again`,
      );
    }
    const { sameJson } = await lib();
    const given = CONFIG_PARTS.filter((p) => parts[p] !== undefined);
    const changed = given.filter((p) => !sameJson(before.config[p], parts[p]));
    if (o.dryRun || changed.length === 0) {
      const after = { ...before, config: { ...before.config, ...parts } };
      // What osctrl would assemble is not ours to compute: a dry run names no new hash.
      return { ...view(after), hash: changed.length === 0 ? before.hash : '', changed, dry_run: Boolean(o.dryRun) };
    }
    const body = Object.fromEntries(changed.map((p) => [p, JSON.stringify(parts[p], null, 2)]));
    await http.request<unknown>('PATCH', `api/v1/environments/config/${seg(env)}`, { body });
    return { ...view(await read(env)), changed, dry_run: false };
  };
  return {
    get: async (env: string, part?: ConfigPart) => view(await read(env), part ? [part] : CONFIG_PARTS),
    put: async (env, part, value, o = {}) => patch(env, { [part]: value }, o),
    patch,
    // osctrl checks nothing but JSON, and what it would assemble is not ours to compute: the
    // commands' own checks are all there is, so there is nothing to ask and no hash to name.
    check: async () => '',
    agent: async (env: string): Promise<AgentConfigView> => {
      const e = await environment(env);
      let config: unknown;
      try {
        config = JSON.parse(e.configuration || '{}');
      } catch {
        throw new UnexpectedAnswerError(`the configuration of ${e.name} is not JSON`);
      }
      const c = (config ?? {}) as Record<string, unknown>;
      const part = (k: string) => (c[k] && typeof c[k] === 'object' ? c[k] : {});
      return {
        environment: e.name,
        hash: await hashOf(e.configuration),
        config: {
          options: part('options'),
          schedule: part('schedule'),
          packs: part('packs'),
          decorators: part('decorators'),
          auto_table_construction: part('auto_table_construction'),
        },
      };
    },
  };
}
