import { Option, type Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { NodeSorts, NodeStatuses, Platforms, PAGE_SIZE_MAX, SortOrders, type NodeSort, type NodeStatus, type Platform, type SortOrder } from '../../api/index.js';
import { CliError, mapError } from '../../errors.js';
import { paginate } from '../../client/index.js';
import { createListWriter, printList, printObject, safeText } from '../../output/index.js';
import { NODE_COLUMNS } from './columns.js';
import { confirmDestructive } from '../confirm.js';

interface ListOpts {
  status?: NodeStatus;
  platform?: Platform;
  search?: string;
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
      'fleetctl nodes delete 3f1c...-uuid --yes',
    ],
  });

  verb<ListOpts>(
    nodes,
    {
      name: 'list',
      aliases: ['ls'],
      summary: 'List the nodes of an environment',
      description:
        'List nodes of the environment (--env or the profile\'s), filtered and sorted by the server.\n' +
        'Without --all or --limit one page is shown (--page, --page-size). --all fetches every page as a\n' +
        'stream, so memory stays flat however large the fleet is.',
      examples: [
        'fleetctl nodes list --status active',
        'fleetctl nodes list --platform linux --sort osquery --order desc --limit 20',
        'fleetctl nodes list --all --json > nodes.json',
        "fleetctl nodes list --status inactive --all -o jsonl --fields uuid,hostname,last_seen",
      ],
    },
    (cmd) =>
      cmd
        .addOption(choiceOption('--status <status>', 'node status', NodeStatuses))
        .addOption(choiceOption('--platform <platform>', 'platform family', Platforms))
        .option('-q, --search <text>', 'substring of uuid, hostname, localname, IP, user, platform or osquery version')
        .addOption(choiceOption('--sort <field>', 'sort field (default lastseen)', NodeSorts))
        .addOption(choiceOption('--order <order>', 'sort order (default: desc for lastseen/firstseen, else asc)', SortOrders))
        .option('--page <n>', 'page number', intArg(1))
        .option('--page-size <n>', `items per page (max ${PAGE_SIZE_MAX})`, intArg(1))
        .addOption(new Option('--limit <n>', 'fetch at most N nodes across pages').argParser(intArg(1)).conflicts('all'))
        .addOption(new Option('--all', 'fetch every page').conflicts(['page'])),
    async (ctx, _args, o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const filters = { status: o.status, platform: o.platform, q: o.search, sort: o.sort, order: o.order };
      if (o.all || o.limit !== undefined) {
        const pageSize = Math.min(o.pageSize ?? PAGE_SIZE_MAX, o.limit ?? PAGE_SIZE_MAX, PAGE_SIZE_MAX);
        const writer = createListWriter(ctx.io, ctx.output(), NODE_COLUMNS);
        for await (const items of paginate((page, page_size) => api.nodes.list(env, { ...filters, page, page_size }), { pageSize, limit: o.limit })) {
          await writer.write(items);
        }
        await writer.end();
        return;
      }
      const page = await api.nodes.list(env, { ...filters, page: o.page, page_size: o.pageSize });
      await printList(ctx.io, ctx.output(), page.items, NODE_COLUMNS);
      if (ctx.io.stdoutIsTTY && !ctx.wantsData() && page.total_items > 0) {
        const first = (page.page - 1) * page.page_size + 1;
        const last = first + page.items.length - 1;
        const more = page.page < page.total_pages ? `; next: --page ${page.page + 1}, or --all` : '';
        ctx.io.err(`Showing ${page.items.length ? `${first}-${last}` : 'none'} of ${page.total_items} nodes (page ${page.page} of ${page.total_pages})${more}\n`);
      }
    },
  );

  verb(
    nodes,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one node by UUID, hostname or local name',
      examples: ['fleetctl nodes show prod-web-0013', 'fleetctl nodes show 3F1C0A2E-... -o json', 'fleetctl nodes show prod-db-0029 --jq .health'],
    },
    (cmd) =>
      cmd
        .argument('<node>', 'node UUID, hostname or local name')
        .option('--show-secret', "include the node's node_key (its credential; env admins only), hidden by default"),
    async (ctx, [ref], o: { showSecret?: boolean }) => {
      const api = await ctx.api();
      const node = withoutNodeKey(await api.nodes.get(ctx.requireEnv(), ref!), o.showSecret);
      await printObject(ctx.io, ctx.output(), node);
    },
  );

  verb<{ yes?: boolean }>(
    nodes,
    {
      name: 'delete',
      aliases: ['rm'],
      summary: 'Delete nodes by UUID',
      description: 'Delete one or more nodes (and their tag links) from the environment. Asks for confirmation at a terminal; needs --yes otherwise.',
      examples: ['fleetctl nodes delete 3f1c0a2e-...', 'fleetctl nodes delete UUID1 UUID2 --yes'],
    },
    (cmd) => cmd.argument('<uuid...>', 'node UUIDs').option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, uuids, o) => {
      const env = ctx.requireEnv();
      await confirmDestructive(ctx, o.yes, `Delete ${uuids.length} node${uuids.length === 1 ? '' : 's'} from ${env}?`);
      const api = await ctx.api();
      const results: { uuid: string; deleted: boolean; error?: string }[] = [];
      let firstError: unknown;
      if (uuids.length === 1) {
        await api.nodes.delete(env, uuids[0]!);
        if (ctx.wantsData()) await printList(ctx.io, ctx.output(), [{ uuid: uuids[0]!, deleted: true }], [{ key: 'uuid' }, { key: 'deleted' }]);
        else ctx.io.err(`Deleted node ${uuids[0]}\n`);
        return;
      }
      for (const uuid of uuids) {
        try {
          await api.nodes.delete(env, uuid);
          results.push({ uuid, deleted: true });
          if (!ctx.wantsData()) ctx.io.err(`Deleted node ${uuid}\n`);
        } catch (e) {
          firstError ??= e;
          const m = mapError(e);
          results.push({ uuid, deleted: false, error: m.message });
          ctx.io.err(`error: ${safeText(uuid)}: ${safeText(m.message)}\n`);
        }
      }
      if (ctx.wantsData()) await printList(ctx.io, ctx.output(), results, [{ key: 'uuid' }, { key: 'deleted' }, { key: 'error' }]);
      if (firstError) {
        const m = mapError(firstError);
        throw new CliError(`${results.filter((r) => !r.deleted).length} of ${uuids.length} deletions failed`, m.exitCode, m.hint);
      }
    },
  );
}
