// --target values of `query run` and `carves run` -> the target lists of the run request.
// `all` (the default) = every node of the environment; `env:NAME`, `platform:NAME`,
// `tag:NAME`; anything else is a node: a UUID goes to uuid_list, a name to host_list.
import type { Command } from 'commander';
import { UsageError } from '../../errors.js';
import { intArg } from '../define.js';
import type { QueryRunRequest } from '../../api/index.js';

export type TargetLists = Pick<QueryRunRequest, 'uuid_list' | 'host_list' | 'platform_list' | 'environment_list' | 'tag_list'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const KINDS = { env: 'environment_list', environment: 'environment_list', platform: 'platform_list', tag: 'tag_list', host: 'host_list', uuid: 'uuid_list' } as const;

/** Collects repeated and comma-separated --target values (commander's reducer). */
export function collectTargets(v: string, acc: string[] = []): string[] {
  return [...acc, ...v.split(',').map((s) => s.trim()).filter(Boolean)];
}

export function targetLists(targets: readonly string[]): TargetLists {
  const out: Required<TargetLists> = { uuid_list: [], host_list: [], platform_list: [], environment_list: [], tag_list: [] };
  let all = false;
  for (const t of targets) {
    if (t === 'all') {
      all = true;
      continue;
    }
    const m = /^([a-z]+):(.*)$/i.exec(t);
    const kind = m ? m[1]!.toLowerCase() : '';
    if (m && kind in KINDS) {
      if (m[2] === '') throw new UsageError(`--target ${t}: the ${kind} is missing (e.g. ${kind}:NAME)`);
      out[KINDS[kind as keyof typeof KINDS]].push(m[2]!);
    } else if (t.includes(':')) {
      throw new UsageError(`--target ${t}: unknown kind "${t.split(':')[0]}" (all, env:NAME, platform:NAME, tag:NAME, a node UUID or hostname)`);
    } else if (UUID.test(t)) out.uuid_list.push(t);
    else out.host_list.push(t);
  }
  const lists = Object.fromEntries(Object.entries(out).filter(([, v]) => v.length > 0)) as TargetLists;
  if (all && Object.keys(lists).length > 0) throw new UsageError('--target all cannot be combined with other targets');
  return lists;
}

/** The options `query run` and `carves run` share: --target, --wait, --expire-hours. */
export function addRunOptions(cmd: Command, noun: 'query' | 'carve', verb: string, waitFor: string): Command {
  return cmd
    .option('-t, --target <target>', `nodes to ${verb}: all, env:NAME, platform:NAME, tag:NAME, UUID or hostname (repeatable)`, collectTargets)
    .option('--wait <duration>', `how long to wait for ${waitFor} (30s, 2m; 0: do not wait)`, '1m')
    .option('--expire-hours <n>', `nodes stop picking the ${noun} up after N hours (server default otherwise)`, intArg(1));
}
