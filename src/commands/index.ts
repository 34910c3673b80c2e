// Every command group, in the order `fleetctl --help` lists them, each loaded only when needed:
// a command names its group first, and only that group's module (its options, help text and
// examples) is loaded and declared; the whole tree only for help, completion and the generator.
// The command tree of all 22 groups was two thirds of what `nodes list` parsed at start-up.
import type { Command } from 'commander';

export type Register = (program: Command) => void;

interface GroupEntry {
  /** The top-level commands the module declares, with their aliases (test/unit/startup.test.ts checks them). */
  names: string[];
  load: () => Promise<Register>;
  /** The group works on the whole tree (completion scripts are generated from it): every group is loaded. */
  whole?: boolean;
}

export const GROUPS: GroupEntry[] = [
  { names: ['login', 'logout'], load: async () => (await import('./login/index.js')).registerLogin },
  { names: ['auth'], load: async () => (await import('./auth/index.js')).registerAuth },
  { names: ['mfa'], load: async () => (await import('./mfa/index.js')).registerMfa },
  { names: ['users'], load: async () => (await import('./users/index.js')).registerUsers },
  { names: ['env'], load: async () => (await import('./env/index.js')).registerEnv },
  { names: ['schedule'], load: async () => (await import('./schedule/index.js')).registerSchedule },
  { names: ['enroll'], load: async () => (await import('./enroll/index.js')).registerEnroll },
  { names: ['tags'], load: async () => (await import('./tags/index.js')).registerTags },
  { names: ['nodes'], load: async () => (await import('./nodes/index.js')).registerNodes },
  { names: ['settings'], load: async () => (await import('./settings/index.js')).registerSettings },
  { names: ['query'], load: async () => (await import('./query/index.js')).registerQuery },
  { names: ['carves'], load: async () => (await import('./carves/index.js')).registerCarves },
  { names: ['logs'], load: async () => (await import('./logs/index.js')).registerLogs },
  { names: ['sinks'], load: async () => (await import('./sinks/index.js')).registerSinks },
  { names: ['audit'], load: async () => (await import('./audit/index.js')).registerAudit },
  { names: ['stats'], load: async () => (await import('./stats/index.js')).registerStats },
  { names: ['apply', 'diff'], load: async () => (await import('./apply/index.js')).registerApply },
  { names: ['api'], load: async () => (await import('./api/index.js')).registerApi },
  { names: ['config'], load: async () => (await import('./config/index.js')).registerConfig },
  { names: ['completion'], load: async () => (await import('./completion/index.js')).registerCompletion, whole: true },
  { names: ['version'], load: async () => (await import('./version/index.js')).registerVersion },
  { names: ['server'], load: async () => (await import('./server/index.js')).registerServer },
  { names: ['dev'], load: async () => (await import('./dev/index.js')).registerDev },
];

/** Global options that take a value (program.ts): their value is not the command's name. */
const VALUE_OPTIONS = new Set([
  '--url',
  '--env',
  '--profile',
  '-o',
  '--output',
  '--fields',
  '--jq',
  '--time',
  '--timeout',
  '--ca-file',
  '--server-flavor',
]);

/** The group a command line names (its first word that is not an option or an option's value), if it is one. */
export function groupOf(args: string[]): GroupEntry | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') return undefined;
    if (a.startsWith('-')) {
      if (VALUE_OPTIONS.has(a)) i++;
      continue;
    }
    return GROUPS.find((g) => g.names.includes(a));
  }
  return undefined;
}

/** The registrations for this command line: its group only, or every group (help, completion, an unknown word). */
export async function loadGroups(args?: string[]): Promise<Register[]> {
  const one = args && groupOf(args);
  return Promise.all((one && !one.whole ? [one] : GROUPS).map((g) => g.load()));
}
