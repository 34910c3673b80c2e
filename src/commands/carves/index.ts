import { Option, type Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { CarveListStatuses, PAGE_SIZE_MAX } from '../../api/constants.js';
import type { CarveAction, CarveFile, CarveListStatus, CarveQuery, CarveRefusalView } from '../../api/index.js';
import { printList, printObject, safeText, type Column } from '../../output/index.js';
import { printPagedList } from '../paged-list.js';
import { confirmDestructive } from '../confirm.js';
import { registerCarveRun } from './run.js';

const CARVE_COLUMNS: Column<CarveQuery>[] = [
  { key: 'name', header: 'NAME', id: true },
  { key: 'carve_status', header: 'STATUS', kind: 'status' },
  { key: 'path', header: 'PATH' },
  { key: 'creator', header: 'CREATOR', drop: 4 },
  // Targets can be long lists of UUIDs: `carves show` has them; here, how far the carve got.
  { key: 'progress', header: 'NODES', get: (c) => `${c.executions}/${c.expected}` },
  { key: 'created_at', header: 'CREATED', kind: 'time', drop: 2 },
  { key: 'expiration', header: 'EXPIRES', kind: 'time', drop: 3 },
];

const CARVE_DETAIL_COLUMNS: Column<CarveQuery>[] = [
  { key: 'name' },
  { key: 'carve_status', header: 'STATUS', kind: 'status' },
  { key: 'query' },
  { key: 'path' },
  { key: 'target' },
  { key: 'creator' },
  { key: 'executions', kind: 'number' },
  { key: 'expected', kind: 'number' },
  { key: 'errors', kind: 'number' },
  { key: 'created_at', header: 'CREATED', kind: 'time' },
  { key: 'updated_at', header: 'UPDATED', kind: 'time' },
  { key: 'expiration', header: 'EXPIRES', kind: 'time' },
];

const FILE_COLUMNS: Column<CarveFile>[] = [
  // Which node each file came from (its hostname; the UUID when the server does not say or the node is gone).
  { key: 'node', header: 'NODE', id: true, get: (f) => f.hostname || f.uuid },
  { key: 'session_id', header: 'SESSION', id: true },
  { key: 'path', header: 'PATH' },
  { key: 'status', header: 'STATUS', kind: 'status' },
  { key: 'blocks', header: 'BLOCKS', get: (f) => `${f.completed_blocks}/${f.total_blocks}` },
  { key: 'carve_size', header: 'SIZE', kind: 'number' },
  // zstd when the node compressed its archive (downloaded as .tar.zst); the note says why an archive holds no file.
  { key: 'compression', header: 'COMPRESSION', drop: 2 },
  { key: 'archived', header: 'ARCHIVED', kind: 'bool' },
  { key: 'created_at', header: 'CREATED', kind: 'time' },
  { key: 'completed_at', header: 'COMPLETED', kind: 'time' },
  { key: 'note', header: 'NOTE' },
];

/** Why nodes' carver starts were refused (issue 26): the file that never came. */
const REFUSAL_COLUMNS: Column<CarveRefusalView>[] = [
  { key: 'node', header: 'NODE', id: true, get: (r) => r.hostname || r.uuid },
  { key: 'error', header: 'REFUSED' },
  { key: 'at', header: 'AT', kind: 'time' },
];

interface ListOpts {
  status?: CarveListStatus;
  search?: string;
  page?: number;
  pageSize?: number;
  limit?: number;
  all?: boolean;
}

// `example`: a demo carve (fleetctl server --dev) in the state the action is for, so each
// verb's examples run as printed against the demo (test/e2e/examples-help.test.ts).
const ACTIONS: { action: CarveAction; summary: string; description: string; destructive: boolean; done: string; example: string }[] = [
  {
    action: 'delete',
    summary: 'Delete a carve and its files',
    description:
      'Delete a carve: its files (every block the nodes uploaded) are removed from the server and can no longer be downloaded; the carve stays listed, as DELETED. Asks at a terminal; needs --yes otherwise.',
    destructive: true,
    done: 'Deleted',
    example: 'carve_tmp_payload',
  },
  {
    action: 'expire',
    summary: 'Expire a carve now',
    description: 'End a carve now: nodes stop picking it up. Asks at a terminal; needs --yes otherwise.',
    destructive: true,
    done: 'Expired',
    example: 'carve_auth_log',
  },
  {
    action: 'complete',
    summary: 'Mark a carve completed',
    description: 'Mark a carve completed: nodes stop picking it up, its files are kept.',
    destructive: false,
    done: 'Completed',
    example: 'carve_bash_history',
  },
  {
    action: 'archive',
    summary: 'Archive the completed files of a carve',
    description: 'Mark the completed files of a carve archived.',
    destructive: false,
    done: 'Archived',
    example: 'carve_etc_hosts',
  },
];

export function registerCarves(program: Command): void {
  const carves = group(program, {
    name: 'carves',
    summary: 'List and inspect file carves, and act on them',
    examples: [
      'fleetctl carves list --status active',
      'fleetctl carves show carve_etc_hosts',
      'fleetctl carves complete carve_bash_history',
      'fleetctl carves delete carve_crontab --yes',
      'fleetctl carves run /etc/hosts --target db-sfo-00003-4206',
    ],
  });

  verb<ListOpts>(
    carves,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the carves of an environment',
      description:
        'List carves of the environment, newest first. Without --all or --limit one page is shown\n' +
        '(--page, --page-size); --all streams every page.',
      examples: ['fleetctl carves list', 'fleetctl carves list --status completed -q hosts', 'fleetctl carves list --all -o json'],
    },
    (cmd) =>
      cmd
        .addOption(choiceOption('--status <status>', 'carve status', CarveListStatuses))
        .option('-q, --search <text>', 'substring of the carve name or path')
        .option('--page <n>', 'page number', intArg(1))
        .option('--page-size <n>', `items per page (max ${PAGE_SIZE_MAX})`, intArg(1))
        .addOption(new Option('--limit <n>', 'fetch at most N carves across pages').argParser(intArg(1)).conflicts('all'))
        .addOption(new Option('--all', 'fetch every page').conflicts(['page'])),
    async (ctx, _args, o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const filters = { status: o.status, q: o.search };
      await printPagedList(ctx, o, {
        noun: 'carves',
        columns: CARVE_COLUMNS,
        schema: (await import('../../api/index.js')).CarveQuery,
        fetchPage: (page, page_size) => api.carves.list(env, { ...filters, page, page_size }),
        empty: `No carves in ${env}${o.status || o.search ? ' match' : ''}`,
      });
    },
  );

  verb(
    carves,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show a carve and its files',
      description: 'Show a carve query and the files it produced. -o json prints the API object {query, files}.',
      examples: ['fleetctl carves show carve_etc_hosts', 'fleetctl carves show carve_etc_hosts -o json --jq ".files[].status"'],
    },
    (cmd) => cmd.argument('<name>', 'carve name'),
    async (ctx, [name]) => {
      const api = await ctx.api();
      const detail = await api.carves.get(ctx.requireEnv(), name);
      if (ctx.wantsData() || ctx.output().fields) {
        await printObject(ctx.io, { ...ctx.output(), schema: (await import('../../api/index.js')).CarveDetail }, detail);
        return;
      }
      await printObject(ctx.io, ctx.output(), detail.query, CARVE_DETAIL_COLUMNS);
      ctx.io.out(ctx.io.stdoutIsTTY ? `\nFILES (${detail.files.length})\n` : '\n');
      if (detail.files.length > 0 || !ctx.io.stdoutIsTTY) await printList(ctx.io, ctx.output(), detail.files, FILE_COLUMNS);
      const refusals = detail.refusals ?? [];
      if (refusals.length > 0) {
        ctx.io.out(ctx.io.stdoutIsTTY ? `\nREFUSED CARVER STARTS (${refusals.length})\n` : '\n');
        await printList(ctx.io, ctx.output(), refusals, REFUSAL_COLUMNS);
      }
    },
  );

  registerCarveRun(carves);

  for (const a of ACTIONS) {
    verb<{ yes?: boolean }>(
      carves,
      {
        name: a.action,
        aliases: a.action === 'delete' ? ['rm'] : undefined,
        summary: a.summary,
        description: a.description,
        examples: [
          `fleetctl carves ${a.action} ${a.example}`,
          `fleetctl carves ${a.action} ${a.example} --env staging${a.destructive ? ' --yes' : ''} -o json`,
        ],
      },
      (cmd) => {
        cmd.argument('<name>', 'carve name');
        if (a.destructive) cmd.option('-y, --yes', 'do not ask for confirmation');
      },
      async (ctx, [name], o) => {
        const env = ctx.requireEnv();
        if (a.destructive) await confirmDestructive(ctx, o.yes, `${a.action === 'delete' ? 'Delete' : 'Expire'} carve ${name} in ${env}?`);
        const api = await ctx.api();
        if (a.action === 'archive') api.need('carve-archive');
        if (a.action === 'delete') api.need('carve-delete');
        const r = await api.carves.action(env, a.action, name);
        if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, action: a.action, message: r.message });
        // delete: the server's message says what was removed (files, blocks).
        else
          ctx.io.err(
            a.action === 'delete'
              ? `${safeText(r.message.charAt(0).toUpperCase() + r.message.slice(1))} (environment ${env})\n`
              : `${a.done} carve ${name} in ${env}\n`,
          );
      },
    );
  }
}
