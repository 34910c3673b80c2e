// The command tree as plain data: what completions and man pages are generated from. Read from
// commander's own objects (through its Help class where it has a public view), so whatever a
// group registers (verbs, aliases, arguments, options, choices) shows up without a second list.
import { Help, type Argument, type Command, type Option } from 'commander';
import { examplesOf } from '../commands/define.js';

export interface OptionSpec {
  /** '-o' when the option has a short form. */
  short?: string;
  /** '--output' */
  long?: string;
  /** As declared: '-o, --output <format>'. */
  flags: string;
  description: string;
  /** The value placeholder ('format') when the option takes a value. */
  valueName?: string;
  /** The value may be left out ('[value]'). */
  valueOptional: boolean;
  choices?: string[];
  /** Default shown in help (commander's default value, or its description). */
  defaultText?: string;
  /** The value is a file path: shells complete file names. */
  file: boolean;
  /** Values come from `fleetctl __complete KIND` (profile and environment names, hostnames, tags). */
  dynamic?: DynamicKind;
}

export const DYNAMIC_KINDS = ['profile', 'env', 'node', 'tag', 'scheduled-query'] as const;
export type DynamicKind = (typeof DYNAMIC_KINDS)[number];

/** Which values are completed dynamically, by value name: `--env <env>`, `<node>`, `--tag <name>`... */
function dynamicKind(valueName: string | undefined, flag?: string): DynamicKind | undefined {
  if (flag === '--profile') return 'profile';
  if (flag === '--tag') return 'tag';
  const n = (valueName ?? '').replace(/\.\.\.$/, '');
  if (n === 'env' || n === 'environment') return 'env';
  if (n === 'node') return 'node';
  if (n === 'tag') return 'tag';
  if (n === 'query-name') return 'scheduled-query';
  return undefined;
}

export interface ArgSpec {
  name: string;
  description: string;
  required: boolean;
  variadic: boolean;
  choices?: string[];
  file: boolean;
  dynamic?: DynamicKind;
}

export interface CommandSpec {
  name: string;
  aliases: string[];
  /** Names from the program down, without the program's own: ['nodes', 'list']. */
  path: string[];
  summary: string;
  description: string;
  /** commander's usage line without the command names: '[options] <node>'. */
  usage: string;
  args: ArgSpec[];
  /** The command's own options, including -h/--help (global options are in ProgramSpec). */
  options: OptionSpec[];
  examples: readonly string[];
  commands: CommandSpec[];
  /** commander's implicit `help [command]`: completed, but not documented as a verb. */
  implicitHelp: boolean;
}

export interface ProgramSpec {
  name: string;
  version: string;
  root: CommandSpec;
  /** Options of the program itself, accepted before or after any subcommand (not -h/--help). */
  globals: OptionSpec[];
}

// Value names that mean "a path on this machine": shells then offer file names. An option's
// <path> is one too (server --db <path|url>: a file, or a URL typed by hand); an argument's is
// not (api <path> is an API path).
const FILE_VALUE = /^(file|dir|directory)$|[-_](file|dir|path)$/i;
const isFileValue = (name: string, option: boolean): boolean => FILE_VALUE.test(name) || (option && /^path(\|url)?$/i.test(name));

const help = new Help();

function optionSpec(o: Option): OptionSpec {
  const m = /[<[]([^>\]]+?)(\.\.\.)?[>\]]/.exec(o.flags);
  const valueName = o.required || o.optional ? (m?.[1] ?? 'value') : undefined;
  let defaultText: string | undefined;
  if (o.defaultValueDescription) defaultText = o.defaultValueDescription;
  else if (valueName && (typeof o.defaultValue === 'string' || typeof o.defaultValue === 'number')) defaultText = String(o.defaultValue);
  return {
    short: o.short,
    long: o.long,
    flags: o.flags,
    description: o.description,
    valueName,
    valueOptional: o.optional,
    choices: o.argChoices?.length ? [...o.argChoices] : undefined,
    defaultText,
    file: valueName !== undefined && !o.argChoices && isFileValue(valueName, true),
    dynamic: valueName !== undefined && !o.argChoices ? dynamicKind(valueName, o.long) : undefined,
  };
}

function argSpec(a: Argument): ArgSpec {
  return {
    name: a.name(),
    description: a.description,
    required: a.required,
    variadic: a.variadic,
    choices: a.argChoices?.length ? [...a.argChoices] : undefined,
    file: !a.argChoices && isFileValue(a.name(), false),
    dynamic: a.argChoices ? undefined : dynamicKind(a.name()),
  };
}

function commandSpec(cmd: Command, path: string[], implicitHelp = false): CommandSpec {
  const subs = cmd.commands.length ? help.visibleCommands(cmd) : [];
  const real = new Set(cmd.commands);
  const visible = help.visibleOptions(cmd);
  const spec: CommandSpec = {
    name: cmd.name(),
    aliases: [...cmd.aliases()],
    path,
    summary: cmd.summary() || cmd.description().split('\n')[0],
    description: cmd.description(),
    usage: cmd.usage(),
    // Not help.visibleArguments(): it hides arguments that have no description.
    args: cmd.registeredArguments.map(argSpec),
    // The program's other options are the globals, accepted at every level.
    options: (path.length === 0 ? visible.filter((o) => o.long === '--help') : visible).map(optionSpec),
    examples: examplesOf(cmd),
    commands: [],
    implicitHelp,
  };
  for (const sub of subs) {
    const isHelp = !real.has(sub);
    spec.commands.push(commandSpec(sub, [...path, sub.name()], isHelp));
  }
  // `fleetctl help <TAB>` and `fleetctl nodes help <TAB>` offer the commands beside it.
  const helpCmd = spec.commands.find((c) => c.implicitHelp);
  const helpArg = helpCmd?.args[0];
  if (helpArg) helpArg.choices = spec.commands.filter((c) => !c.implicitHelp).map((c) => c.name);
  return spec;
}

/** The whole tree of `program` (from fullProgram()). */
export function readProgram(program: Command): ProgramSpec {
  const root = commandSpec(program, []);
  const globals = help
    .visibleOptions(program)
    .filter((o) => o.long !== '--help')
    .map(optionSpec);
  return { name: program.name(), version: program.version() ?? '', root, globals };
}

/** Every command below the program, depth first (groups before their verbs). */
export function allCommands(spec: CommandSpec): CommandSpec[] {
  return spec.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** The options a command accepts: its own, then the global ones it does not redefine. */
export function optionsAt(program: ProgramSpec, cmd: CommandSpec): OptionSpec[] {
  const taken = new Set(cmd.options.flatMap((o) => [o.short, o.long]).filter(Boolean));
  return [...cmd.options, ...program.globals.filter((g) => !(g.short && taken.has(g.short)) && !(g.long && taken.has(g.long)))];
}

/** Option names as typed: ['-o', '--output']. */
export function optionNames(o: OptionSpec): string[] {
  return [o.short, o.long].filter((n): n is string => Boolean(n));
}
