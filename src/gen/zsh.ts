// zsh completion function: one function per command, each an _arguments call (groups hand the
// words after their subcommand to that subcommand's function, as zsh's own _git does).
import { allCommands, optionNames, optionsAt, type ArgSpec, type CommandSpec, type OptionSpec, type ProgramSpec } from './model.js';
import { GENERATED_NOTE } from './note.js';
import { sq } from './bash.js';

const fnName = (prog: string, c: CommandSpec): string => ['_' + prog, ...c.path].join('_').replace(/[^A-Za-z0-9_]/g, '_');

/** Text inside an _arguments description: `[...]` needs ] and \ escaped. */
const bracket = (s: string): string => firstLine(s).replace(/\\/g, '\\\\').replace(/\]/g, '\\]').replace(/\[/g, '\\[');
/** A message or `name:description` part: colons are separators. */
const colon = (s: string): string => firstLine(s).replace(/\\/g, '\\\\').replace(/:/g, '\\:');
const firstLine = (s: string): string => s.split('\n')[0].trim();

/** The action completing a value: its choices, file names, or nothing (a message only). */
function action(v: { choices?: string[]; file: boolean; dynamic?: string }): string {
  if (v.file) return '_files';
  // Names only fleetctl knows (profiles, environments, hosts, tags): asked with a short timeout.
  if (v.dynamic) return `{compadd -- \${(f)"$(fleetctl __complete ${v.dynamic} \${(q)PREFIX} 2>/dev/null)"}}`;
  // Inside (...) a value's blanks, parentheses, quotes and colons (the spec separator) are escaped.
  if (v.choices) return `(${v.choices.map((c) => c.replace(/([\\ ()'"`$:])/g, '\\$1')).join(' ')})`;
  return ' ';
}

function optionSpecs(o: OptionSpec): string[] {
  const names = optionNames(o);
  const exclusive = names.length > 1 ? `(${names.join(' ')})` : '';
  const desc = `[${bracket(o.description)}]`;
  const value = o.valueName ? `:${colon(o.valueName)}:${action(o)}` : '';
  return names.map((n) => {
    // -o+ takes -ojson or -o json; --status= takes --status=x or --status x.
    const form = o.valueName ? (n.startsWith('--') ? `${n}=` : `${n}+`) : n;
    return `${exclusive}${form}${desc}${value}`;
  });
}

function argSpecs(args: ArgSpec[]): string[] {
  return args.map((a, i) => {
    const msg = colon(a.description || a.name) || a.name;
    if (a.variadic) return `*:${msg}:${action(a)}`;
    return `${i + 1}${a.required ? ':' : '::'}${msg}:${action(a)}`;
  });
}

const specLines = (specs: string[]): string[] => specs.map((s) => `    ${sq(s)} \\`);

function commandFunction(p: ProgramSpec, c: CommandSpec): string {
  const name = fnName(p.name, c);
  const title = [p.name, ...c.path].join(' ');
  const globalsVar = `__${p.name.replace(/\W/g, '_')}_globals`;
  // The global specs are set once by the program's function (zsh scoping makes its locals visible
  // to the functions it calls); a command that redefines a global option lists the rest itself.
  const globals = optionsAt(p, c).filter((o) => p.globals.includes(o));
  const globalLines =
    globals.length === p.globals.length ? [`    "\${${globalsVar}[@]}" \\`] : globals.flatMap(optionSpecs).map((s) => `    ${sq(s)} \\`);
  const optionLines = [...specLines(c.options.flatMap(optionSpecs)), ...globalLines];
  const head = c.path.length
    ? ''
    : `  local -a ${globalsVar}=(\n${p.globals
        .flatMap(optionSpecs)
        .map((s) => `    ${sq(s)}`)
        .join('\n')}\n  )\n`;
  if (!c.commands.length) {
    return `${name}() {
${head}  _arguments -s -S : \\
${[...optionLines, ...specLines(argSpecs(c.args))].join('\n')}
    && return 0
  return 1
}`;
  }
  const described = c.commands.map((s) => `    ${sq(`${s.name.replace(/:/g, '\\:')}:${firstLine(s.summary)}`)}`);
  const dispatch = c.commands.map((s) => `      (${[s.name, ...s.aliases].join('|')}) ${fnName(p.name, s)} && ret=0 ;;`);
  return `${name}() {
${head}  local curcontext=$curcontext state state_descr line ret=1
  typeset -A opt_args
  _arguments -C -s -S : \\
${optionLines.join('\n')}
    '1: :->command' \\
    '*:: :->argument' && ret=0
  case $state in
  command)
    local -a commands=(
${described.join('\n')}
    )
    _describe -t commands ${sq(`${title} command`)} commands && ret=0
    ;;
  argument)
    curcontext=\${curcontext%:*:*}:${[p.name, ...c.path].join('-')}-$words[1]:
    case $words[1] in
${dispatch.join('\n')}
    esac
    ;;
  esac
  return ret
}`;
}

export function zshCompletion(p: ProgramSpec): string {
  const cmds = [p.root, ...allCommands(p.root)];
  // The root function comes last: sourcing the file (or autoloading it) then calls it.
  const functions = cmds.slice(1).map((c) => commandFunction(p, c));
  return `#compdef ${p.name}
# zsh completion for ${p.name}
${GENERATED_NOTE.map((l) => `# ${l}`).join('\n')}
#
# Install: write it as _${p.name} into a directory of $fpath, before compinit runs, e.g.
#   mkdir -p ~/.zfunc && ${p.name} completion zsh > ~/.zfunc/_${p.name}
#   and in ~/.zshrc:  fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit
#      or: source <(${p.name} completion zsh)     (in ~/.zshrc, after compinit)

${functions.join('\n\n')}

${commandFunction(p, p.root)}

# Autoloaded from $fpath, this file is the body of ${fnName(p.name, p.root)}: complete now.
# Sourced (source <(${p.name} completion zsh)): register the function for ${p.name}.
if [[ $funcstack[1] == ${fnName(p.name, p.root)} ]]; then
  ${fnName(p.name, p.root)} "$@"
else
  compdef ${fnName(p.name, p.root)} ${p.name}
fi
`;
}
