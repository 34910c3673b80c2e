// Which nodes `tags apply|unapply` act on: named ones (UUID, hostname or local name, resolved by
// the client to UUIDs), or a filter over the whole nodes list. Nothing is applied unless every
// name resolves to exactly one node.
import { mapLimit } from '../../lib/map-limit.js';
import { PAGE_SIZE_MAX } from '../../api/constants.js';
import type { NodeStatus, Platform } from '../../api/index.js';
import type { FleetApi } from '../../client/index.js';
import { paginate } from '../../client/paginate.js';
import { ApiError, CliError, ExitCode, UsageError } from '../../errors.js';
import type { IO } from '../../io.js';

export interface NodeFilter {
  search?: string;
  status?: NodeStatus;
  platform?: Platform;
  /** Issue 20: the server's derived posture.risk_level / health.status. */
  risk?: string;
  health?: string;
}

const FILTER_FLAGS = '--search, --status, --platform, --risk or --health';

/** Parallel lookups, but few enough not to look like a flood to the server's rate limit. */
const LOOKUP_CONCURRENCY = 8;
/** Candidates listed for an ambiguous name; `nodes list -q NAME` shows them all. */
const MAX_CANDIDATES = 10;

export function hasFilter(f: NodeFilter): boolean {
  return f.search !== undefined || f.status !== undefined || f.platform !== undefined || f.risk !== undefined || f.health !== undefined;
}

export function describeFilter(f: NodeFilter): string {
  const parts: string[] = [];
  if (f.search !== undefined) parts.push(`--search ${JSON.stringify(f.search)}`);
  if (f.status !== undefined) parts.push(`--status ${f.status}`);
  if (f.platform !== undefined) parts.push(`--platform ${f.platform}`);
  if (f.risk !== undefined) parts.push(`--risk ${f.risk}`);
  if (f.health !== undefined) parts.push(`--health ${f.health}`);
  return parts.join(' ');
}

type Lookup = { ref: string; uuid: string } | { ref: string; error: ApiError | Error };

/**
 * UUIDs of the named nodes, in the order given, duplicates dropped. Every name that is unknown
 * (404) or ambiguous (409) is reported on one error; the exit code is the first failure's.
 */
export async function resolveNodeRefs(api: FleetApi, env: string, refs: readonly string[]): Promise<string[]> {
  const lookups = await mapLimit<string, Lookup>([...new Set(refs)], LOOKUP_CONCURRENCY, async (ref) => {
    try {
      const node = await api.nodes.get(env, ref);
      return { ref, uuid: node.uuid };
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 409)) return { ref, error: e };
      throw e; // auth, network, server trouble: not about this name
    }
  });
  const failed = lookups.filter((l): l is Extract<Lookup, { error: unknown }> => 'error' in l);
  if (failed.length > 0) {
    const lines = failed.map((f) => {
      const e = f.error as ApiError;
      if (e.status === 409) {
        const uuids = Array.isArray(e.body.uuids) ? (e.body.uuids as unknown[]).map(String) : [];
        const shown =
          uuids.slice(0, MAX_CANDIDATES).join(', ') + (uuids.length > MAX_CANDIDATES ? ` and ${uuids.length - MAX_CANDIDATES} more` : '');
        return `"${f.ref}" matches ${uuids.length || 'several'} nodes in ${env}${uuids.length ? `: ${shown}` : ''}`;
      }
      return `no node "${f.ref}" in ${env}`;
    });
    const first = failed[0].error as ApiError;
    const code = first.status === 409 ? ExitCode.conflict : ExitCode.notFound;
    const hint = failed.some((f) => (f.error as ApiError).status === 409)
      ? 'name ambiguous nodes by UUID (`fleetctl nodes list -q NAME` shows them)'
      : 'check the names with `fleetctl nodes list -q NAME`';
    throw new CliError(`${lines.join('; ')}; nothing changed`, code, hint);
  }
  return [...new Set(lookups.map((l) => (l as { uuid: string }).uuid))];
}

/** UUIDs of every node matching the filter, walking all pages of the nodes list. */
export async function selectNodes(api: FleetApi, env: string, f: NodeFilter): Promise<string[]> {
  const uuids: string[] = [];
  if (f.risk !== undefined || f.health !== undefined) api.need('node-health-filter');
  const query = { q: f.search, status: f.status, platform: f.platform, risk: f.risk, health: f.health, sort: 'uuid' as const };
  for await (const items of paginate((page, page_size) => api.nodes.list(env, { ...query, page, page_size }), {
    pageSize: PAGE_SIZE_MAX,
  })) {
    for (const n of items) uuids.push(n.uuid);
  }
  if (uuids.length === 0) throw new CliError(`no nodes in ${env} match ${describeFilter(f)}; nothing changed`, ExitCode.notFound);
  return [...new Set(uuids)];
}

/** Named nodes or a filter, never both (a mix would be unclear: union or intersection?). */
export async function nodesToChange(api: FleetApi, env: string, refs: readonly string[], f: NodeFilter): Promise<string[]> {
  if (refs.length > 0 && hasFilter(f)) throw new UsageError(`name nodes or select them with ${FILTER_FLAGS}, not both`);
  if (refs.length > 0) return resolveNodeRefs(api, env, refs);
  if (hasFilter(f)) return selectNodes(api, env, f);
  throw new UsageError(`no nodes: name them (UUID, hostname or local name; - reads them from stdin) or select them with ${FILTER_FLAGS}`);
}

/**
 * `tags apply TAG -`: node names from stdin, one or more a line (whitespace or commas between),
 * as `jq -r '.[].uuid'` or `cut -f1` print them; blank lines and `#` comments are skipped.
 */
export async function refsFromStdin(io: IO): Promise<string[]> {
  if (io.stdin.isTTY) throw new UsageError('- reads node names from standard input: pipe them in (e.g. ... | fleetctl tags apply TAG -)');
  const chunks: Buffer[] = [];
  for await (const c of io.stdin) chunks.push(Buffer.from(c as Buffer));
  const refs = Buffer.concat(chunks)
    .toString('utf8')
    .split('\n')
    .map((l) => l.replace(/#.*$/, ''))
    .flatMap((l) => l.split(/[\s,]+/))
    .filter(Boolean);
  if (refs.length === 0) throw new CliError('no node names on standard input; nothing changed', ExitCode.notFound);
  return refs;
}
