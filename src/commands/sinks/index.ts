import type { Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { SinkSources, SinkTypes } from '../../api/constants.js';
import type { SinkCreateBody } from '../../api/index.js';
import { ApiError, CliError, ExitCode, UsageError } from '../../errors.js';
import { printList, printObject, type Column } from '../../output/index.js';
import { confirmDestructive } from '../confirm.js';
import { readInput } from '../read-input.js';
import { parseSinkConfig, showSink, type ShownSink } from './config.js';
import { resolveEnvRef } from './env-id.js';
import { findSink, targetEnv } from './find.js';
import { registerSinkChanges } from './edit.js';

const SINK_COLUMNS: Column<ShownSink>[] = [
  { key: 'id', header: 'ID', kind: 'number' },
  { key: 'name', header: 'NAME', id: true },
  { key: 'type', header: 'TYPE' },
  { key: 'source', header: 'SOURCE' },
  { key: 'enabled', header: 'ENABLED', kind: 'bool' },
  { key: 'order', header: 'ORDER', kind: 'number', drop: 4 },
  { key: 'state.backlog_entries', header: 'BACKLOG', kind: 'number' },
  { key: 'state.oldest_undelivered_at', header: 'OLDEST', kind: 'time', drop: 2 },
  { key: 'state.last_success_at', header: 'LAST SUCCESS', kind: 'time', drop: 3 },
  { key: 'state.last_error', header: 'LAST ERROR', drop: 1 },
  { key: 'config', header: 'CONFIG', drop: 5 },
];

/** `sinks show`: every field, the state's one by one. */
const SHOW_COLUMNS: Column<ShownSink>[] = [
  ...[
    'id',
    'name',
    'type',
    'source',
    'enabled',
    'order',
    'info',
    'config',
    'environment_id',
    'exports_count',
    'bytes_sent',
    'created_at',
    'updated_at',
  ].map((key) => ({ key })),
  ...[
    'supported',
    'delivering',
    'backlog_entries',
    'backlog_bytes',
    'oldest_undelivered_at',
    'delivered',
    'dropped',
    'rejected',
    'failed',
    'last_success_at',
    'last_error',
    'last_error_at',
    'retrying_since',
  ].map((k) => ({
    key: `state.${k}`,
    header: k.toUpperCase().replace(/_/g, ' '),
    ...(k.endsWith('_at') || k === 'retrying_since' ? { kind: 'time' as const } : {}),
  })),
];

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

interface AddOpts {
  name: string;
  type: string;
  source: string;
  info?: string;
  disabled?: boolean;
  order?: number;
  config?: string;
}

export function registerSinks(program: Command): void {
  const sinks = group(program, {
    name: 'sinks',
    summary: 'Show, add, change, test, remove and clone log sinks (super-admin)',
    examples: [
      'fleetctl sinks list prod',
      'fleetctl sinks list global -o json',
      'fleetctl sinks show splunk-hec',
      'fleetctl sinks clone --from prod --to dev',
      'fleetctl sinks add prod --name archive --type file --source result --config \'{"path":"prod/results.log"}\'',
      'fleetctl sinks edit archive prod --set max_size_mb=500',
      'fleetctl sinks test archive prod',
    ],
  });

  registerSinksListAndShow(sinks);

  registerSinksClone(sinks);

  registerSinksAddAndRemove(sinks);
  registerSinkChanges(sinks);
}

function registerSinksListAndShow(sinks: Command): void {
  verb(
    sinks,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the log sinks of an environment, or the global ones',
      description:
        'List log sinks by their order. ENV is a name, UUID or id; `global` lists the sinks that apply to every\n' +
        "environment; without ENV, --env or the profile's environment. The sink config (bytes in the API)\n" +
        'is shown decoded: JSON output carries it as a JSON value.',
      examples: ['fleetctl sinks list', 'fleetctl sinks list global', 'fleetctl sinks list staging -o json --jq ".[].config"'],
    },
    (cmd) => cmd.argument('[env]', 'environment name, UUID or id, or global'),
    async (ctx, [ref]) => {
      const api = await ctx.api();
      api.need('log-sinks');
      const env = await targetEnv(ctx, api, ref);
      const list = await api.sinks.list(env.id);
      await printList(ctx.io, ctx.output(), list.map(showSink), SINK_COLUMNS);
      if (list.length === 0 && ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`No log sinks in ${env.label}.\n`);
    },
  );

  verb(
    sinks,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one log sink, by name or id',
      description:
        'Show one log sink of an environment (or `global`) by its name (unique in that scope) or id, with\n' +
        "its config decoded. Without ENV, --env or the profile's environment.",
      examples: ['fleetctl sinks show splunk-hec', 'fleetctl sinks show local-file global -o json'],
    },
    (cmd) => cmd.argument('<sink>', 'sink name or id').argument('[env]', 'environment name, UUID or id, or global'),
    async (ctx, [ref, envRef]) => {
      const api = await ctx.api();
      api.need('log-sinks');
      const { sink } = await findSink(ctx, api, ref, envRef);
      await printObject(ctx.io, ctx.output(), showSink(sink), ctx.wantsData() ? [] : SHOW_COLUMNS);
    },
  );
}

function registerSinksClone(sinks: Command): void {
  verb<{ from: string; to: string; overwrite?: boolean; yes?: boolean }>(
    sinks,
    {
      name: 'clone',
      aliases: ['copy'],
      summary: 'Copy every log sink of one environment (or global) to another',
      description:
        'Copy the sinks of --from to --to, in order, with their counters reset. When --to already has sinks\n' +
        'the server refuses (exit 6) unless --overwrite, which replaces them in one transaction; --overwrite\n' +
        'asks at a terminal and needs --yes otherwise.',
      examples: ['fleetctl sinks clone --from prod --to dev', 'fleetctl sinks clone --from global --to staging --overwrite --yes'],
    },
    (cmd) =>
      cmd
        .requiredOption('--from <env>', 'source: environment name, UUID or id, or global')
        .requiredOption('--to <env>', 'target: environment name, UUID or id')
        .option('--overwrite', 'replace the sinks the target already has')
        .option('-y, --yes', 'do not ask before --overwrite replaces sinks'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      api.need('log-sinks');
      const from = await resolveEnvRef(api, o.from);
      const to = await resolveEnvRef(api, o.to);
      if (from.id === to.id) throw new UsageError(`--from and --to are both ${from.label}`);
      if (o.overwrite && !o.yes) {
        const existing = (await api.sinks.list(to.id)).length;
        const what =
          existing > 0
            ? `Replace the ${plural(existing, 'log sink')} of ${to.label} with those of ${from.label}?`
            : `Copy the log sinks of ${from.label} to ${to.label} (overwrite)?`;
        await confirmDestructive(ctx, o.yes, what);
      }
      let cloned;
      try {
        cloned = await api.sinks.clone({ source_environment_id: from.id, target_environment_id: to.id, overwrite: Boolean(o.overwrite) });
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          throw new CliError(`${to.label} already has log sinks; nothing changed`, ExitCode.conflict, 'pass --overwrite to replace them');
        }
        throw e;
      }
      if (ctx.wantsData()) await printList(ctx.io, ctx.output(), cloned.map(showSink), SINK_COLUMNS);
      else
        ctx.io.err(
          `Cloned ${plural(cloned.length, 'log sink')} from ${from.label} to ${to.label}${o.overwrite ? ' (replacing its sinks)' : ''}\n`,
        );
    },
  );
}

function registerSinksAddAndRemove(sinks: Command): void {
  verb<AddOpts>(
    sinks,
    {
      name: 'add',
      aliases: ['create'],
      summary: 'Add a log sink to an environment or to global',
      description:
        'Add a sink. --config is its JSON configuration: inline, @FILE, or - for stdin. ENV as for `sinks list`.\n' +
        'Without --order it goes after the existing sinks.',
      examples: [
        'fleetctl sinks add prod --name archive --type file --source result --config \'{"path":"prod/results.log"}\'',
        'fleetctl sinks add global --name siem --type http --source status --config @siem.json --disabled',
      ],
    },
    (cmd) =>
      cmd
        .argument('[env]', 'environment name, UUID or id, or global')
        .requiredOption('--name <name>', 'sink name')
        .addOption(choiceOption('--type <type>', 'sink type', SinkTypes).makeOptionMandatory())
        .addOption(choiceOption('--source <source>', 'which logs it receives', SinkSources).makeOptionMandatory())
        .option('--info <text>', 'free text shown with the sink')
        .option('--disabled', 'add it switched off')
        .option('--order <n>', 'position among the sinks (0 first)', intArg(0))
        .option('--config <json>', 'JSON configuration: inline, @FILE, or - for stdin'),
    async (ctx, [ref], o) => {
      let config: Record<string, unknown> | undefined;
      if (o.config !== undefined) {
        const text =
          o.config === '-' || o.config.startsWith('@')
            ? await readInput(ctx.io, o.config === '-' ? '-' : o.config.slice(1), '--config')
            : o.config;
        config = parseSinkConfig(text, '--config');
      }
      const api = await ctx.api();
      api.need('log-sinks');
      const env = await targetEnv(ctx, api, ref);
      const body: SinkCreateBody = { name: o.name, type: o.type, source: o.source, environment_id: env.id, enabled: !o.disabled };
      if (o.info !== undefined) body.info = o.info;
      if (o.order !== undefined) body.order = o.order;
      if (config !== undefined) body.config = config;
      const sink = await api.sinks.create(body);
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), showSink(sink));
      else ctx.io.err(`Added log sink ${sink.id} (${sink.name}) to ${env.label}\n`);
    },
  );

  verb<{ yes?: boolean }>(
    sinks,
    {
      name: 'remove',
      aliases: ['rm', 'delete'],
      summary: 'Delete a log sink by id',
      description: 'Delete one log sink (ids are in `sinks list`). Asks at a terminal; needs --yes otherwise.',
      examples: ['fleetctl sinks remove 5', 'fleetctl sinks remove 4 --yes'],
    },
    (cmd) => cmd.argument('<id>', 'sink id', (v: string) => String(intArg(1)(v))).option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, [id], o) => {
      await confirmDestructive(ctx, o.yes, `Delete log sink ${id}?`);
      const api = await ctx.api();
      api.need('log-sinks');
      const r = await api.sinks.delete(Number(id));
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { id: Number(id), message: r.message });
      else ctx.io.err(`Deleted log sink ${id}\n`);
    },
  );
}
