// sinks edit / enable / disable / test (issue 28): change a sink in place and try it.
// `--set key=value` changes one config key (a dotted path for nested keys; the value is JSON
// when it parses as JSON, else a string), `--unset key` removes one, `--config` replaces the
// whole config. Secrets are never typed on a command line: `--set token=...` is refused with the
// way to give it (`token_env`, `token_file`, or `--config @FILE`). The config the server shows has
// its secrets as "<redacted>"; sent back, they keep their stored values.
import type { Command } from 'commander';
import { choiceOption, intArg, verb } from '../define.js';
import { SinkSources } from '../../api/constants.js';
import { SinkSecretKeys, type LogSink, type SinkEditBody } from '../../api/index.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { printObject } from '../../output/index.js';
import { readInput } from '../read-input.js';
import type { Context } from '../../context.js';
import { decodeSinkConfig, parseSinkConfig, showSink } from './config.js';
import { findSink } from './find.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** Whether a config path (`sasl.password`, `headers.Authorization`) names a secret's value. */
function isSecretPath(path: string): boolean {
  const parts = path.split('.');
  const last = parts[parts.length - 1];
  return (SinkSecretKeys as readonly string[]).includes(last) || (parts.length === 2 && parts[0] === 'headers');
}

function setPath(config: Record<string, unknown>, path: string, value: unknown, flag: string): void {
  const parts = path.split('.');
  if (parts.some((p) => p === '')) throw new UsageError(`${flag} ${path}: not a key path`);
  let o = config;
  for (const p of parts.slice(0, -1)) {
    const next = o[p];
    if (next === undefined) o[p] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next))
      throw new UsageError(`${flag} ${path}: ${p} is not an object`);
    o = o[p] as Record<string, unknown>;
  }
  if (value === undefined) delete o[parts[parts.length - 1]];
  else o[parts[parts.length - 1]] = value;
}

/** `key=value`: the value as JSON when it is JSON (numbers, true, arrays), else the text. */
function parseSet(arg: string): [string, unknown] {
  const i = arg.indexOf('=');
  if (i <= 0) throw new UsageError(`--set ${arg}: expected KEY=VALUE`);
  const key = arg.slice(0, i);
  const text = arg.slice(i + 1);
  if (isSecretPath(key)) {
    throw new UsageError(
      `--set ${key}: secrets are not given on the command line (other users can read it)`,
      `use --set ${key}_env=VARIABLE (the server's environment) or --set ${key}_file=/path (a file on the server), or put it in --config @FILE`,
    );
  }
  try {
    return [key, JSON.parse(text)];
  } catch {
    return [key, text];
  }
}

interface EditOpts {
  set?: string[];
  unset?: string[];
  config?: string;
  name?: string;
  info?: string;
  order?: number;
  source?: string;
  enable?: boolean;
  disable?: boolean;
}

async function report(ctx: Context, sink: LogSink, what: string): Promise<void> {
  if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), showSink(sink));
  else ctx.io.err(`${what} log sink ${sink.id} (${sink.name})\n`);
}

export function registerSinkChanges(sinks: Command): void {
  verb<EditOpts>(
    sinks,
    {
      name: 'edit',
      summary: 'Change a log sink: its config keys, name, info, order, source, or whether it is enabled',
      description:
        'Change one sink (by name or id, in ENV or `global`). --set KEY=VALUE changes a config key (a dotted path for a\n' +
        'nested one; VALUE is JSON when it parses, else text), --unset KEY removes one, --config replaces the whole\n' +
        'config (inline, @FILE, or - for stdin). Secrets are never given with --set: use KEY_env (a variable of the\n' +
        "server's environment), KEY_file (a file on the server), or --config @FILE. The server checks the result\n" +
        'as at creation and changes nothing when it refuses. Enabling, or a new --source, starts the sink at the\n' +
        'newest entries; other changes keep its backlog.',
      examples: [
        'fleetctl sinks edit archive prod --set max_size_mb=500 --set max_files=10',
        'fleetctl sinks edit siem global --set url=https://logs.example.com/osquery --set headers_env.Authorization=SIEM_TOKEN',
        'fleetctl sinks edit siem global --unset timeout_seconds --info "SIEM gateway"',
      ],
    },
    (cmd) =>
      cmd
        .argument('<sink>', 'sink name or id')
        .argument('[env]', 'environment name, UUID or id, or global')
        .option('--set <key=value>', 'set a config key (repeatable)', collect)
        .option('--unset <key>', 'remove a config key (repeatable)', collect)
        .option('--config <json>', 'replace the whole config: inline, @FILE, or - for stdin')
        .option('--name <name>', 'rename it')
        .option('--info <text>', 'free text shown with the sink')
        .option('--order <n>', 'position among the sinks (0 first)', intArg(0))
        .addOption(choiceOption('--source <source>', 'which logs it receives', SinkSources))
        .option('--enable', 'switch it on')
        .option('--disable', 'switch it off'),
    async (ctx, [ref, envRef], o) => {
      if (o.enable && o.disable) throw new UsageError('--enable and --disable: choose one');
      if (o.config !== undefined && (o.set?.length || o.unset?.length))
        throw new UsageError('--config replaces the whole config: give it alone, or use --set/--unset');
      const sets = (o.set ?? []).map(parseSet);
      let replace: Record<string, unknown> | undefined;
      if (o.config !== undefined) {
        const text =
          o.config === '-' || o.config.startsWith('@')
            ? await readInput(ctx.io, o.config === '-' ? '-' : o.config.slice(1), '--config')
            : o.config;
        replace = parseSinkConfig(text, '--config');
      }
      const api = await ctx.api();
      api.need('log-sinks');
      const { sink } = await findSink(ctx, api, ref, envRef);
      const body: SinkEditBody = {};
      if (o.name !== undefined) body.name = o.name;
      if (o.info !== undefined) body.info = o.info;
      if (o.order !== undefined) body.order = o.order;
      if (o.source !== undefined) body.source = o.source;
      if (o.enable) body.enabled = true;
      if (o.disable) body.enabled = false;
      if (replace) body.config = replace;
      else if (sets.length || o.unset?.length) {
        const current = decodeSinkConfig(sink.config);
        const config = (typeof current === 'object' && current !== null && !Array.isArray(current) ? current : {}) as Record<
          string,
          unknown
        >;
        for (const [k, v] of sets) setPath(config, k, v, '--set');
        for (const k of o.unset ?? []) setPath(config, k, undefined, '--unset');
        body.config = config;
      }
      if (Object.keys(body).length === 0)
        throw new UsageError('nothing to change: give --set, --unset, --config, --name, --info, --order, --source, --enable or --disable');
      await report(ctx, await api.sinks.edit(sink.id, body), 'Changed');
    },
  );

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    verb(
      sinks,
      {
        name,
        summary: enabled
          ? 'Switch a log sink on: it delivers what agents send from now on'
          : 'Switch a log sink off: it stops delivering and keeps nothing for later',
        examples: enabled ? ['fleetctl sinks enable siem global'] : ['fleetctl sinks disable archive prod'],
      },
      (cmd) => cmd.argument('<sink>', 'sink name or id').argument('[env]', 'environment name, UUID or id, or global'),
      async (ctx, [ref, envRef]) => {
        const api = await ctx.api();
        api.need('log-sinks');
        const { sink } = await findSink(ctx, api, ref, envRef);
        await report(ctx, await api.sinks.edit(sink.id, { enabled }), enabled ? 'Enabled' : 'Disabled');
      },
    );
  }

  verb(
    sinks,
    {
      name: 'test',
      summary: 'Send one test entry to a log sink and print what its destination answered',
      description:
        'Sends one test entry (host fleetctl-sink-test; a status line for a status sink, else a result of query\n' +
        'fleetctl_sink_test) through the sink as configured, enabled or not, outside its delivery (its backlog and\n' +
        'counters do not move), and prints what the destination answered. Exit 1 when it failed.',
      examples: ['fleetctl sinks test archive prod', 'fleetctl sinks test archive prod -o json'],
    },
    (cmd) => cmd.argument('<sink>', 'sink name or id').argument('[env]', 'environment name, UUID or id, or global'),
    async (ctx, [ref, envRef]) => {
      const api = await ctx.api();
      api.need('log-sinks');
      const { sink } = await findSink(ctx, api, ref, envRef);
      const r = await api.sinks.test(sink.id);
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), r);
      else ctx.io.out(`${r.ok ? 'ok' : 'failed'}: ${r.answer} (${r.ms} ms)\n`);
      if (!r.ok)
        throw new CliError(
          `log sink ${sink.name}: the test entry was not delivered`,
          ExitCode.error,
          'fix its config with `fleetctl sinks edit`, then test again',
        );
    },
  );
}
