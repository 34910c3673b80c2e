// Man pages (roff, man macros) from the command tree: fleetctl(1) for the program, its global
// options, top-level verbs, exit status, environment and files; fleetctl-<group>(1) per group.
import { ExitCode } from '../errors.js';
import { allCommands, type ArgSpec, type CommandSpec, type OptionSpec, type ProgramSpec } from './model.js';
import { GENERATED_NOTE } from './note.js';

/** Text safe in roff: backslash, hyphen-minus, quotes, and non-ASCII as \[uXXXX]. */
export function roffText(s: string): string {
  return s
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/'/g, '\\(aq')
    .replace(/`/g, '\\(ga')
    .replace(/[^\x20-\x7e\t]/gu, (c) => `\\[u${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
}

/** One output line of text: a leading . or ' would make it a request. */
function textLine(s: string): string {
  const t = roffText(s);
  return /^[.']/.test(t) ? `\\&${t}` : t;
}

/** A macro argument: double quotes inside are \(dq. */
const arg = (s: string): string => `"${roffText(s).replace(/"/g, '\\(dq')}"`;
const bold = (s: string): string => `\\fB${roffText(s)}\\fR`;
const ital = (s: string): string => `\\fI${roffText(s)}\\fR`;

/**
 * Description text as paragraphs: blank lines separate them; wrapped lines are joined (roff
 * fills) and the last one ends as a sentence; a paragraph with indented lines (a list, commands
 * to type) keeps its layout.
 */
function paragraphs(text: string): string[] {
  const out: string[] = [];
  const paras = text.trim().split(/\n\s*\n/);
  paras.forEach((para, i) => {
    const lines = para.replace(/\s+$/, '').split('\n');
    if (out.length) out.push('.PP');
    if (lines.some((l) => /^\s/.test(l))) {
      out.push('.nf', ...lines.map((l) => textLine(l.replace(/\s+$/, ''))), '.fi');
    } else {
      const joined = lines.map((l) => l.trim()).join(' ');
      out.push(textLine(i === paras.length - 1 ? sentence(joined) : joined));
    }
  });
  return out;
}

function sentence(s: string): string {
  const t = s.trim();
  return !t || /[.!?:]$/.test(t) ? t : `${t}.`;
}

function optionTerm(o: OptionSpec): string {
  const names = [o.short, o.long]
    .filter((n): n is string => Boolean(n))
    .map(bold)
    .join(', ');
  if (!o.valueName) return names;
  const v = ital(o.valueName);
  return o.valueOptional ? `${names} [${v}]` : `${names} ${v}`;
}

function optionItems(opts: OptionSpec[]): string[] {
  return opts.flatMap((o) => {
    const extra: string[] = [];
    if (o.choices) extra.push(`One of: ${o.choices.join(', ')}.`);
    if (o.defaultText !== undefined) extra.push(`Default: ${o.defaultText}.`);
    return ['.TP', optionTerm(o), textLine([sentence(o.description), ...extra].filter(Boolean).join(' '))];
  });
}

function argumentItems(args: ArgSpec[]): string[] {
  return args.flatMap((a) => {
    const extra = a.choices ? ` One of: ${a.choices.join(', ')}.` : '';
    const more = a.variadic ? ' (one or more)' : '';
    return ['.TP', `${ital(a.name)}${roffText(more)}`, textLine(`${sentence(a.description || a.name)}${extra}`)];
  });
}

/** `fleetctl nodes delete [options] uuid...` with roff fonts. */
function synopsis(prog: string, c: CommandSpec): string {
  const parts = [bold([prog, ...c.path].join(' '))];
  if (c.options.length) parts.push(`[${ital('options')}]`);
  if (c.commands.length) parts.push(ital('command'));
  for (const a of c.args) {
    const name = `${ital(a.name)}${a.variadic ? '...' : ''}`;
    parts.push(a.required ? name : `[${name}]`);
  }
  return parts.join(' ');
}

function examples(list: readonly string[]): string[] {
  if (!list.length) return [];
  return ['.PP', '.RS 4', '.nf', ...list.map((e) => textLine(`$ ${e}`)), '.fi', '.RE'];
}

function header(p: ProgramSpec, title: string, name: string, summary: string): string[] {
  return [
    ...GENERATED_NOTE.map((l) => `.\\" ${l}`),
    `.TH ${roffText(title.toUpperCase())} 1 "" ${arg(`${p.name} ${p.version}`)} "User Commands"`,
    // Ragged right and no hyphenation: option names and paths must stay whole to be copied.
    '.ad l',
    '.nh',
    '.SH NAME',
    `${roffText(name)} \\- ${roffText(summary.replace(/\.$/, ''))}`,
  ];
}

/** A verb (or sub-group) inside a page: heading, synopsis, text, arguments, options, examples. */
function commandSection(p: ProgramSpec, c: CommandSpec, heading: '.SS' | '.SH'): string[] {
  const out = [`${heading} ${arg([p.name, ...c.path].join(' '))}`, synopsis(p.name, c), '.PP', ...paragraphs(c.description)];
  if (c.aliases.length) out.push('.PP', textLine(`Aliases: ${c.aliases.join(', ')}.`));
  const verbs = c.commands.filter((s) => !s.implicitHelp);
  if (verbs.length) {
    out.push('.PP', 'Commands:');
    for (const s of verbs) out.push('.TP', bold(s.name), textLine(sentence(s.summary)));
  }
  if (c.args.length) out.push('.PP', 'Arguments:', ...argumentItems(c.args));
  const own = c.options.filter((o) => o.long !== '--help');
  if (own.length) out.push('.PP', 'Options:', ...optionItems(own));
  if (c.examples.length) out.push('.PP', 'Examples:', ...examples(c.examples));
  return out;
}

const EXIT_STATUS: Record<keyof typeof ExitCode, string> = {
  ok: 'Success.',
  error: 'An error not covered below, including a request the server rejected as invalid (HTTP 400).',
  usage: 'Wrong usage: an unknown command or option, a missing or invalid argument, a missing --yes where no prompt is possible.',
  notFound: 'Not found (HTTP 404): the environment, node, user or other object does not exist.',
  auth: 'Not authenticated (HTTP 401): not logged in, or the session has expired. Run fleetctl login.',
  forbidden: 'Forbidden (HTTP 403): logged in, but without the permission the request needs.',
  conflict: 'Conflict (HTTP 409): for example the object exists already, or the change would remove the last super-admin.',
  unavailable: 'Rate limited or unavailable (HTTP 429 or 503), or the server could not be reached, after retries.',
  unsupported: 'Not supported by this server: the feature does not exist there (e.g. MFA on osctrl); refused before any request.',
  incomplete:
    'A live query or carve ended incomplete: some targets did not answer (offline, or not within --wait), answered with an error, or (carves) did not upload their file. What did arrive was printed.',
  interrupted: 'Interrupted (Ctrl-C).',
};

const ENVIRONMENT: [string, string][] = [
  ['FLEETCTL_URL', "Server URL, when --url is not given (overrides the profile's)."],
  ['FLEETCTL_ENV', "Environment name or UUID, when --env is not given (overrides the profile's)."],
  [
    'FLEETCTL_TOKEN',
    'An API token to use instead of the stored one; it always wins over the keychain and the credentials file. Useful in CI.',
  ],
  ['FLEETCTL_PROFILE', 'Profile to use, when --profile is not given.'],
  ['FLEETCTL_PAGER', 'Pager for long tables at a terminal (then PAGER, then less -FRX); empty or cat means none.'],
  ['FLEETCTL_NO_PROGRESS', 'When set, --all exports never show a progress line.'],
  ['FLEETCTL_SERVER_FLAVOR', 'What the server is (fleet or osctrl), when --server-flavor is not given; overrides what login learned.'],
  ['FLEETCTL_CONFIG_DIR', 'Directory of the configuration file and the credentials file, instead of the default (see FILES).'],
  ['NO_COLOR', 'When set and not empty, no colors in any output (like --no-color).'],
  ['FORCE_COLOR', 'When set (and not 0 or false), colors even when the output is not a terminal.'],
  ['HTTPS_PROXY', 'Proxy for requests to the server (also HTTP_PROXY and the lower-case names).'],
  ['NO_PROXY', 'Hosts reached without the proxy (comma-separated).'],
  ['NODE_EXTRA_CA_CERTS', 'A PEM file of extra certificate authorities to trust (like --ca-file).'],
  [
    'FLEETCTL_ADMIN_PASSWORD',
    'fleetctl server: password of the first super-admin, when a new database is created (or use --admin-password-stdin).',
  ],
  [
    'FLEETCTL_JWT_SECRET',
    'fleetctl server: the secret that signs tokens (at least 32 bytes). Without it, one is generated once and kept in the database.',
  ],
];

const FILES: [string, string][] = [
  [
    '$XDG_CONFIG_HOME/fleetctl/config.json',
    'Profiles: server URL, environment and username of each, and the current profile. Without XDG_CONFIG_HOME, ~/.config/fleetctl/config.json; on macOS ~/Library/Preferences/fleetctl/config.json; in FLEETCTL_CONFIG_DIR when set. Holds no token.',
  ],
  [
    '$XDG_CONFIG_HOME/fleetctl/credentials.json',
    'Tokens (mode 0600), beside config.json, when the OS keychain cannot be used or with --insecure-storage. Otherwise tokens are kept in the OS keychain under the service name fleetctl.',
  ],
  ['$XDG_DATA_HOME/fleetctl/fleet.db', 'Default database of fleetctl server (~/.local/share/fleetctl/fleet.db without XDG_DATA_HOME).'],
];

function definitionList(items: [string, string][], term: (s: string) => string): string[] {
  return items.flatMap(([k, v]) => ['.TP', term(k), textLine(v)]);
}

export function groupPageName(p: ProgramSpec, g: CommandSpec): string {
  return [p.name, ...g.path].join('-');
}

function mainPage(p: ProgramSpec): string {
  const top = p.root.commands.filter((c) => !c.implicitHelp);
  const groups = top.filter((c) => c.commands.length);
  const verbs = top.filter((c) => !c.commands.length);
  const out = [
    ...header(
      p,
      p.name,
      p.name,
      p.root.description.replace(/^./, (c) => c.toLowerCase()),
    ),
    '.SH SYNOPSIS',
    `${bold(p.name)} [${ital('global options')}] ${ital('command')} [${ital('arguments')}] [${ital('options')}]`,
    '.br',
    `${bold(p.name)} ${ital('group')} ${ital('command')} [${ital('arguments')}] [${ital('options')}]`,
    '.SH DESCRIPTION',
    ...paragraphs(p.root.description),
    '.PP',
    textLine(
      'Commands are grouped by the kind of object they act on (nodes, users, tags, ...). Every command accepts the global options, before or after its name, and -h or --help for its own help. Results go to standard output (a table at a terminal, tab-separated values in a pipe, or JSON, JSON lines, YAML or CSV with -o); prompts, progress, warnings and errors go to standard error. Nothing is ever prompted for unless standard input and standard output are terminals.',
    ),
    '.SH GLOBAL OPTIONS',
    ...optionItems(p.globals),
    '.TP',
    `${bold('-h')}, ${bold('--help')}`,
    textLine('Show help for fleetctl or for the command it follows.'),
    '.SH COMMANDS',
  ];
  for (const g of groups) {
    out.push(`.SS ${arg(`${p.name} ${g.name}`)}`, textLine(`${sentence(g.summary)} See ${groupPageName(p, g)}(1).`));
    if (ownOptions(g).length) out.push('.TP', ownSynopsis(p, g), textLine(sentence(g.summary)));
    for (const v of g.commands.filter((s) => !s.implicitHelp)) out.push('.TP', synopsis(p.name, v), textLine(sentence(v.summary)));
  }
  for (const v of verbs) out.push(...commandSection(p, v, '.SS'));
  out.push(
    '.SH EXIT STATUS',
    ...definitionList(
      (Object.keys(EXIT_STATUS) as (keyof typeof ExitCode)[]).map((k) => [String(ExitCode[k]), EXIT_STATUS[k]]),
      (s) => bold(s),
    ),
    '.SH ENVIRONMENT',
    ...definitionList(ENVIRONMENT, bold),
    '.SH FILES',
    ...definitionList(FILES, ital),
  );
  const exampleSets = top.filter((c) => c.examples.length);
  if (exampleSets.length) {
    out.push('.SH EXAMPLES');
    for (const c of exampleSets) out.push(textLine(sentence(c.summary)), ...examples(c.examples), '.PP');
    out.pop();
  }
  out.push('.SH SEE ALSO', groups.map((g) => `${bold(groupPageName(p, g))}(1)`).join(',\n'));
  return `${out.join('\n')}\n`;
}

/** A group that is also a command of its own (`fleetctl server [options]` beside `server backup`): its options. */
const ownOptions = (g: CommandSpec) => g.options.filter((o) => o.long !== '--help');
const ownSynopsis = (p: ProgramSpec, g: CommandSpec) => `${bold([p.name, ...g.path].join(' '))} [${ital('options')}]`;

function groupPage(p: ProgramSpec, g: CommandSpec): string {
  const verbs = allCommands(g).filter((c) => !c.implicitHelp);
  const own = ownOptions(g);
  const out = [
    ...header(
      p,
      groupPageName(p, g),
      groupPageName(p, g),
      g.summary.replace(/^./, (c) => c.toLowerCase()),
    ),
    '.SH SYNOPSIS',
    [...(own.length ? [ownSynopsis(p, g)] : []), ...verbs.map((v) => synopsis(p.name, v))].join('\n.br\n'),
    '.SH DESCRIPTION',
    ...paragraphs(g.description),
  ];
  if (g.aliases.length) out.push('.PP', textLine(`Aliases: ${g.aliases.join(', ')}.`));
  if (own.length) out.push('.SH OPTIONS', ...optionItems(own));
  out.push('.SH COMMANDS');
  for (const v of verbs) out.push(...commandSection(p, v, '.SS'));
  out.push(
    '.SH GLOBAL OPTIONS',
    textLine(`Every command also accepts the global options of ${p.name}(1): ${p.globals.map((o) => o.long ?? o.short).join(', ')}.`),
  );
  if (g.examples.length) out.push('.SH EXAMPLES', ...examples(g.examples).slice(1));
  out.push('.SH SEE ALSO', `${bold(p.name)}(1)`);
  return `${out.join('\n')}\n`;
}

/** Every page: file name (fleetctl.1, fleetctl-nodes.1, ...) -> roff text. */
export function manPages(p: ProgramSpec): Map<string, string> {
  const pages = new Map<string, string>([[`${p.name}.1`, mainPage(p)]]);
  for (const g of p.root.commands.filter((c) => c.commands.length && !c.implicitHelp))
    pages.set(`${groupPageName(p, g)}.1`, groupPage(p, g));
  return pages;
}
