import type { Command } from 'commander';
import { verb } from '../define.js';
import { printList, printObject } from '../../output/index.js';
import { ENV_STATS_COLUMNS, printDashboard } from './dashboard.js';

export function registerStats(program: Command): void {
  verb(
    program,
    {
      name: 'stats',
      watch: true,
      summary: 'Fleet statistics across the environments you can access',
      description:
        'At a terminal: totals, a per-environment table and platform bars. Piped, or with -o/--json/--fields/--jq:\n' +
        'data instead. json, jsonl, yaml and --jq get the statistics object as the API returns it; table\n' +
        '(piped: tab-separated) and csv get one row per environment.',
      examples: [
        'fleetctl stats',
        'fleetctl stats -o json',
        'fleetctl stats --jq .active_nodes',
        'fleetctl stats | sort -t"$(printf \'\\t\')" -k3 -n',
      ],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      const stats = await api.stats.get();
      const out = ctx.output();
      const g = ctx.globals;
      const dashboard = ctx.io.stdoutIsTTY && g.output === undefined && !g.json && out.jq === undefined && !out.fields;
      if (dashboard) return printDashboard(ctx.io, stats);
      if (out.jq === undefined && (out.format === 'table' || out.format === 'csv'))
        return printList(ctx.io, out, stats.environments, ENV_STATS_COLUMNS);
      await printObject(ctx.io, out, stats);
    },
  );
}
