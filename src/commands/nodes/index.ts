import { Option, type Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { HealthStatuses, NodeSorts, NodeStatuses, Platforms, PAGE_SIZE_MAX, RiskLevels, SortOrders } from '../../api/constants.js';
import type { NodeSort, NodeStatus, Platform, SortOrder } from '../../api/index.js';

type RiskLevel = (typeof RiskLevels)[number];
type HealthStatus = (typeof HealthStatuses)[number];
import { CliError, mapError } from '../../errors.js';
import { colorsFor, printList, printObject, safeText } from '../../output/index.js';
import { renderNodeView } from './show-view.js';
import { mapLimit } from '../../lib/map-limit.js';
import { printPagedList } from '../paged-list.js';
import { NODE_COLUMNS } from './columns.js';
import { confirmDestructive } from '../confirm.js';

interface ListOpts {
  status?: NodeStatus;
  risk?: RiskLevel;
  health?: HealthStatus;
  platform?: Platform;
  search?: string;
  tag?: string;
  configStale?: boolean;
  sort?: NodeSort;
  order?: SortOrder;
  page?: number;
  pageSize?: number;
  limit?: number;
  all?: boolean;
}

/**
 * `node_key` is the agent's credential: whoever has it can speak for the node. It is left out of
 * every format (JSON too: scripts print JSON into CI logs) unless --show-secret, the way the
 * API itself leaves it out for callers who may not see it, so consumers already handle absence.
 */
export function withoutNodeKey<T extends { node_key?: string }>(node: T, show?: boolean): T {
  if (show || node.node_key === undefined) return node;
  const { node_key: _hidden, ...rest } = node;
  return rest as T;
}

export function registerNodes(program: Command): void {
  const nodes = group(program, {
    name: 'nodes',
    summary: 'List, inspect and delete enrolled nodes',
    examples: [
      'fleetctl nodes list --status active',
      'fleetctl nodes list --platform darwin -q alice --sort hostname',
      'fleetctl nodes list --all -o json | jq length',
      'fleetctl nodes show prod-web-0013',
      'fleetctl nodes delete 88a84950-5342-4d38-aef8-90beafd1d29b --yes',
    ],
  });

  registerNodesList(nodes);

  registerNodesShowAndDelete(nodes);
}

function registerNodesList(nodes: Command): void {
  verb<ListOpts>(
    nodes,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the nodes of an environment',
      description:
        "List nodes of the environment (--env or the profile's), filtered and sorted by the server.\n" +
        'Without --all or --limit one page is shown (--page, --page-size). --all fetches every page as a\n' +
        'stream, so memory stays flat however large the fleet is.',
      examples: [
        'fleetctl nodes list --status active',
        'fleetctl nodes list --risk high --all --json',
        'fleetctl nodes list --health unhealthy --platform windows',
        'fleetctl nodes list --tag pci --all --json',
        'fleetctl nodes list --platform linux --sort osquery --order desc --limit 20',
        'fleetctl nodes list --all --json > nodes.json',
        'fleetctl nodes list --config-stale',
        'fleetctl nodes list --status inactive --all -o jsonl --fields uuid,hostname,last_seen',
      ],
    },
    (cmd) =>
      cmd
        .addOption(choiceOption('--status <status>', 'node status', NodeStatuses))
        .addOption(choiceOption('--platform <platform>', 'platform family', Platforms))
        .addOption(choiceOption('--risk <level>', 'posture.risk_level, as the server derives it (docs/api.md)', RiskLevels))
        .addOption(choiceOption('--health <status>', 'health.status, as the server derives it', HealthStatuses))
        .option('-t, --tag <name>', 'only nodes carrying this tag')
        .option('-q, --search <text>', 'substring of uuid, hostname, localname, IP, user, platform or osquery version')
        .option('--config-stale', "only nodes not yet on the environment's current osquery configuration (see `env config --agent`)")
        .addOption(choiceOption('--sort <field>', 'sort field (default lastseen)', NodeSorts))
        .addOption(choiceOption('--order <order>', 'sort order (default: desc for lastseen/firstseen, else asc)', SortOrders))
        .option('--page <n>', 'page number', intArg(1))
        .option('--page-size <n>', `items per page (max ${PAGE_SIZE_MAX})`, intArg(1))
        .addOption(new Option('--limit <n>', 'fetch at most N nodes across pages').argParser(intArg(1)).conflicts('all'))
        .addOption(new Option('--all', 'fetch every page').conflicts(['page'])),
    async (ctx, _args, o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const filters = {
        status: o.status,
        platform: o.platform,
        risk: o.risk,
        health: o.health,
        q: o.search,
        tag: o.tag,
        config: o.configStale ? ('stale' as const) : undefined,
        sort: o.sort,
        order: o.order,
      };
      const filtered = o.status || o.platform || o.search || o.tag || o.configStale || o.risk || o.health;
      if (o.tag !== undefined) api.need('node-tag-filter');
      if (o.configStale) api.need('node-config-filter');
      if (o.risk !== undefined || o.health !== undefined) api.need('node-health-filter');
      const { Node } = await import('../../api/index.js');
      await printPagedList(ctx, o, {
        noun: 'nodes',
        columns: NODE_COLUMNS,
        schema: Node,
        fetchPage: (page, page_size) => api.nodes.list(env, { ...filters, page, page_size }),
        empty: `No nodes in ${env}${filtered ? ' match' : ''}`,
      });
    },
  );
}

function registerNodesShowAndDelete(nodes: Command): void {
  verb(
    nodes,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one node by UUID, hostname or local name',
      description:
        'Show one node. At a terminal: a readable view in groups (identity, status and health, system, tags). ' +
        'The raw API record: -o json or yaml, --fields, --jq, or piped (key<TAB>value lines).',
      examples: [
        'fleetctl nodes show prod-web-0013',
        'fleetctl nodes show 89915AB5-8BFA-4CB5-AC75-CFE1D7626738 -o json',
        'fleetctl nodes show prod-db-0029 --jq .health',
      ],
    },
    (cmd) =>
      cmd
        .argument('<node>', 'node UUID, hostname or local name')
        .option('--show-secret', "include the node's node_key (its credential; env admins only), hidden by default"),
    async (ctx, [ref], o: { showSecret?: boolean }) => {
      const api = await ctx.api();
      const node = withoutNodeKey(await api.nodes.get(ctx.requireEnv(), ref, { statusProblems: true }), o.showSecret);
      const out = { ...ctx.output(), schema: (await import('../../api/index.js')).Node };
      if (ctx.io.stdoutIsTTY && !ctx.wantsData() && !out.fields) ctx.io.out(renderNodeView(node, colorsFor(ctx.io)));
      else await printObject(ctx.io, out, node);
    },
  );

  verb<{ yes?: boolean }>(
    nodes,
    {
      name: 'delete',
      aliases: ['rm'],
      summary: 'Delete nodes by UUID, hostname or local name',
      description:
        'Delete one or more nodes (and their tag links) from the environment. Each NODE is what `nodes show` ' +
        'takes (UUID, hostname or local name); all are looked up first, so a typo or an ambiguous name deletes ' +
        'nothing. Asks for confirmation naming the hosts at a terminal; needs --yes otherwise.',
      examples: ['fleetctl nodes delete prod-vpn-0041', 'fleetctl nodes delete prod-vpn-0045 prod-vpn-0049 --yes'],
    },
    (cmd) => cmd.argument('<node...>', 'node UUIDs, hostnames or local names').option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, refs, o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      // Resolve every reference before asking: the confirmation names the hosts, and a bad one
      // (404, or 409 for a name several nodes share) stops everything before anything is deleted.
      const targets = await mapLimit(refs, 4, async (ref) => {
        const n = await api.nodes.get(env, ref);
        return { uuid: n.uuid, hostname: n.hostname };
      });
      const unique = [...new Map(targets.map((t) => [t.uuid, t])).values()];
      const names = unique.map((t) => `${t.hostname || '(no hostname)'} (${t.uuid})`);
      const question =
        unique.length === 1 ? `Delete node ${names[0]} from ${env}?` : `Delete ${unique.length} nodes from ${env}: ${names.join(', ')}?`;
      await confirmDestructive(ctx, o.yes, question);
      const results: { uuid: string; hostname: string; deleted: boolean; error?: string }[] = [];
      let firstError: unknown;
      for (const t of unique) {
        try {
          await api.nodes.delete(env, t.uuid);
          results.push({ ...t, deleted: true });
          if (!ctx.wantsData()) ctx.io.err(`Deleted node ${t.hostname || t.uuid} (${t.uuid})\n`);
        } catch (e) {
          firstError ??= e;
          const m = mapError(e);
          results.push({ ...t, deleted: false, error: m.message });
          if (unique.length > 1) ctx.io.err(`error: ${safeText(t.uuid)}: ${safeText(m.message)}\n`);
        }
      }
      if (ctx.wantsData())
        await printList(ctx.io, ctx.output(), results, [{ key: 'uuid' }, { key: 'hostname' }, { key: 'deleted' }, { key: 'error' }]);
      if (firstError) {
        const m = mapError(firstError);
        // One node: its own error, exactly as a single delete reports it (exit code and hint).
        if (unique.length === 1) throw firstError instanceof Error ? firstError : new CliError(m.message, m.exitCode, m.hint);
        throw new CliError(`${results.filter((r) => !r.deleted).length} of ${unique.length} deletions failed`, m.exitCode, m.hint);
      }
    },
  );
}
