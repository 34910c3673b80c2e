// --target values of `query run` and `carves run` -> the target lists of the run request.
// `all` (the default) = every node of the environment; `env:NAME`, `platform:NAME`, `tag:NAME`,
// `status:active|inactive`, `health:...`, `risk:...`; anything else is a node: a UUID goes to
// uuid_list, a name to host_list. Several targets are a union, as the API's lists are: a node is
// targeted when it matches any of them.
import { Option, type Command } from 'commander';
import { UsageError } from '../../errors.js';
import { intArg } from '../define.js';
import { HealthStatuses, RiskLevels } from '../../api/constants.js';
import type { QueryRunRequest } from '../../api/index.js';

export type TargetLists = Pick<
  QueryRunRequest,
  'uuid_list' | 'host_list' | 'platform_list' | 'environment_list' | 'tag_list' | 'status_list' | 'health_list' | 'risk_list'
>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const KINDS = {
  env: 'environment_list',
  environment: 'environment_list',
  platform: 'platform_list',
  tag: 'tag_list',
  host: 'host_list',
  uuid: 'uuid_list',
  status: 'status_list',
  health: 'health_list',
  risk: 'risk_list',
} as const;
/** Kinds whose values are a fixed set, checked before any request. */
const CHOICES: Partial<Record<keyof typeof KINDS, readonly string[]>> = {
  status: ['active', 'inactive'],
  health: HealthStatuses,
  risk: RiskLevels,
};

export const TARGET_HELP =
  'all (the default: every node of the environment), env:NAME, platform:NAME, tag:NAME, status:active|inactive, ' +
  `health:${HealthStatuses.join('|')}, risk:${RiskLevels.join('|')}, or a node UUID or hostname ` +
  '(uuid:ID for a node whose identifier is not UUID-shaped, e.g. enrolled with --host_identifier=hostname or specified)';

/** Collects repeated and comma-separated --target values (commander's reducer). */
export function collectTargets(v: string, acc: string[] = []): string[] {
  return [
    ...acc,
    ...v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}

export function targetLists(targets: readonly string[]): TargetLists {
  const out: Required<TargetLists> = {
    uuid_list: [],
    host_list: [],
    platform_list: [],
    environment_list: [],
    tag_list: [],
    status_list: [],
    health_list: [],
    risk_list: [],
  };
  let all = false;
  for (const t of targets) {
    if (t === 'all') {
      all = true;
      continue;
    }
    const m = /^([a-z]+):(.*)$/i.exec(t);
    const kind = m ? m[1].toLowerCase() : '';
    if (m && kind in KINDS) {
      const value = m[2];
      if (value === '') throw new UsageError(`--target ${t}: the ${kind} is missing (e.g. ${kind}:NAME)`);
      const choices = CHOICES[kind as keyof typeof KINDS];
      if (choices && !choices.includes(value.toLowerCase())) throw new UsageError(`--target ${t}: ${kind} is one of ${choices.join(', ')}`);
      out[KINDS[kind as keyof typeof KINDS]].push(choices ? value.toLowerCase() : value);
    } else if (t.includes(':')) {
      throw new UsageError(`--target ${t}: unknown kind "${t.split(':')[0]}" (${TARGET_HELP})`);
    } else if (UUID.test(t)) out.uuid_list.push(t);
    else out.host_list.push(t);
  }
  const lists = Object.fromEntries(Object.entries(out).filter(([, v]) => v.length > 0)) as TargetLists;
  if (all && Object.keys(lists).length > 0)
    throw new UsageError('--target all cannot be combined with other targets (several targets are a union: all would swallow them)');
  return lists;
}

export interface RunFlags {
  target?: string[];
  /** Always set for query run ('1m'); carves run computes its default from the targets' interval (carveWaitSeconds). */
  wait: string;
  exit?: boolean;
  detach?: boolean;
  expire?: string;
  expireHours?: number;
}

/** The options `query run` and `carves run` share. */
export function addRunOptions(cmd: Command, noun: 'query' | 'carve', verb: string, waitFor: string): Command {
  return cmd
    .option(
      '-t, --target <target>',
      `nodes to ${verb} (repeatable, comma-separated; several are a union: a node matching any is targeted): ${TARGET_HELP}`,
      collectTargets,
    )
    .option(
      '--wait <duration>',
      `how long to wait for ${waitFor} (30s, 2m; 0: start it and return, like --detach)` +
        (noun === 'carve'
          ? " (default: twice the targets' query interval as the server knows it, else the environment's, plus the minute osquery waits to start a carve and 2m for the upload; at least 5m)"
          : ''),
      noun === 'carve' ? undefined : '1m',
    )
    .option(
      '--exit',
      `stop as soon as every online target has ${noun === 'carve' ? 'uploaded its file' : 'answered'} (offline ones are not waited for)`,
    )
    .option(
      '--detach',
      `leave the ${noun} running when the command ends (it expires after --expire); otherwise it is stopped on exit or Ctrl-C`,
    )
    .option('--expire <duration>', `with --detach (or --wait 0): when the ${noun} expires on the server (default 24h)`)
    .addOption(new Option('--expire-hours <n>', 'the same as --expire Nh').argParser(intArg(1)).hideHelp());
}

/**
 * The default wait of `carves run` (issue 26): osquery reads the carve at its distributed interval,
 * starts it on its scheduler's next whole minute, then uploads; twice the interval (a node polls
 * at most once an interval after the start, and may poll just before), the minute, two minutes
 * for the upload, and never under 5 minutes. The interval is the longest of the online targets'
 * as the server knows it (POST /api/v1/carves/{env}/targets), else the environment's.
 */
export function carveWaitSeconds(queryIntervalSeconds: number): number {
  const interval = Number.isFinite(queryIntervalSeconds) && queryIntervalSeconds > 0 ? queryIntervalSeconds : 60;
  return Math.max(300, 2 * interval + 60 + 120);
}
