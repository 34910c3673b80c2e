// fish completions: `complete` lines guarded by one state function that follows the command line
// (subcommands, options and their values, arguments) the way commander parses it.
import { allCommands, optionNames, type CommandSpec, type OptionSpec, type ProgramSpec } from './model.js';
import { GENERATED_NOTE } from './note.js';

/** fish single quotes: only \ and ' are special inside. */
const fq = (s: string): string => `'${s.replace(/[\\']/g, '\\$&')}'`;
const firstLine = (s: string): string => s.split('\n')[0].trim();
const key = (c: CommandSpec): string => c.path.join(' ');
const optKey = (o: OptionSpec): string => `${o.flags}\0${o.description}`;

/** Names only fleetctl knows (profiles, environments, hosts, tags): see `_dynamic` in the script. */
const dynamicList = (prog: string, kind: string) => `(__${prog.replace(/\W/g, '_')}_dynamic ${kind})`;

function optionLine(prog: string, o: OptionSpec, condition?: string): string {
  const parts = ['complete', '-c', prog];
  if (condition) parts.push('-n', fq(condition));
  if (o.short) parts.push('-s', o.short.slice(1));
  if (o.long) parts.push('-l', o.long.slice(2));
  if (o.valueName) {
    if (o.file) parts.push('-r', '-F');
    else parts.push('-x');
    if (o.choices) parts.push('-a', fq(o.choices.join(' ')));
    else if (o.dynamic) parts.push('-a', fq(dynamicList(prog, o.dynamic)));
  }
  parts.push('-d', fq(firstLine(o.description)));
  return parts.join(' ');
}

export function fishCompletion(p: ProgramSpec): string {
  const prog = p.name;
  const fn = `__${prog.replace(/\W/g, '_')}`;
  const cmds = [p.root, ...allCommands(p.root)];
  const real = cmds.filter((c) => !c.implicitHelp);

  // Options every command has (-h/--help) are declared once, like the global ones.
  const everywhere = real[0].options.filter((o) => real.every((c) => c.options.some((x) => optKey(x) === optKey(o))));
  const everywhereKeys = new Set(everywhere.map(optKey));

  const subArms: string[] = [];
  const lines: string[] = [];
  const globalNames = new Set(p.globals.flatMap(optionNames));
  const overriding: string[] = [];
  for (const c of cmds) {
    for (const s of c.commands) {
      subArms.push(`        case ${[s.name, ...s.aliases].map((n) => fq(`${key(c)}|${n}`)).join(' ')}\n            echo ${fq(key(s))}`);
    }
    if (c.options.some((o) => optionNames(o).some((n) => globalNames.has(n)))) overriding.push(key(c));
  }

  const at = (c: CommandSpec): string => `${fn}_at ${fq(key(c))}`;
  for (const c of cmds) {
    if (c.commands.length) {
      for (const s of c.commands)
        lines.push(`complete -c ${prog} -n ${fq(`${fn}_at ${fq(key(c))} 0`)} -a ${fq(s.name)} -d ${fq(firstLine(s.summary))}`);
    }
    for (const o of c.options) if (!everywhereKeys.has(optKey(o))) lines.push(optionLine(prog, o, at(c)));
    c.args.forEach((a, i) => {
      if (!a.choices && !a.file && !a.dynamic) return;
      const cond = `${fn}_at ${fq(key(c))} ${i}${a.variadic ? '+' : ''}`;
      const values = a.file ? '-F' : `-a ${fq(a.choices ? a.choices.join(' ') : dynamicList(prog, a.dynamic!))}`;
      lines.push(`complete -c ${prog} -n ${fq(cond)} ${values} -d ${fq(firstLine(a.description || a.name))}`);
    });
  }
  const unique = [...new Set(overriding)];
  const globalCondition = unique.length ? `not ${fn}_at_any ${unique.map(fq).join(' ')}` : undefined;
  const globalLines = [...everywhere, ...p.globals].map((o) => optionLine(prog, o, p.globals.includes(o) ? globalCondition : undefined));

  const valueTaking = cmds.flatMap((c) => c.options.filter((o) => o.valueName).flatMap((o) => optionNames(o).map((n) => `${key(c)}|${n}`)));
  const flagsOverriding = cmds.flatMap((c) =>
    c.options
      .filter((o) => !o.valueName)
      .flatMap((o) =>
        optionNames(o)
          .filter((n) => globalNames.has(n))
          .map((n) => `${key(c)}|${n}`),
      ),
  );
  const globalValue = p.globals.filter((o) => o.valueName).flatMap(optionNames);

  return `# fish completion for ${prog}
${GENERATED_NOTE.map((l) => `# ${l}`).join('\n')}
#
# Install: ${prog} completion fish > ~/.config/fish/completions/${prog}.fish

# The command reached by subcommand $argv[2] (a name or an alias) of command $argv[1].
function ${fn}_sub
    switch "$argv[1]|$argv[2]"
${subArms.join('\n')}
        case '*'
            return 1
    end
end

# Whether option $argv[2] of command $argv[1] takes a value (so the next word is that value).
function ${fn}_takes_value
    switch "$argv[1]|$argv[2]"
        case ${valueTaking.length ? valueTaking.map(fq).join(' ') : "''"}
            return 0
        case ${flagsOverriding.length ? flagsOverriding.map(fq).join(' ') : "''"}
            return 1
    end
    switch "$argv[2]"
        case ${globalValue.length ? globalValue.map(fq).join(' ') : "''"}
            return 0
    end
    return 1
end

# Follows the words before the cursor: sets ${fn}_path (e.g. "nodes list") and
# ${fn}_npos (positional arguments after it). Cached per command line: every
# condition below asks, and fish evaluates them all at each TAB.
function ${fn}_state
    set -l line (commandline -pc)
    if set -q ${fn}_line; and test "$${fn}_line" = "$line"
        return
    end
    set -g ${fn}_line $line
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ''
    set -l npos 0
    set -l skip 0
    set -l dashdash 0
    for t in $tokens
        if test $skip = 1
            set skip 0
        else if test $dashdash = 1
            set npos (math $npos + 1)
        else if test "$t" = --
            set dashdash 1
        else if string match -q -- '-*' $t
            if not string match -q -- '*=*' $t; and ${fn}_takes_value "$path" $t
                set skip 1
            end
        else if test $npos = 0; and set -l sub (${fn}_sub "$path" $t)
            set path $sub
        else
            set npos (math $npos + 1)
        end
    end
    set -g ${fn}_path $path
    set -g ${fn}_npos $npos
end

# At command $argv[1]; with $argv[2], also at that positional argument (N, or N+ for N and after).
function ${fn}_at
    ${fn}_state
    test "$${fn}_path" = "$argv[1]"; or return 1
    set -q argv[2]; or return 0
    if string match -q -- '*+' $argv[2]
        test $${fn}_npos -ge (string trim -r -c + -- $argv[2])
    else
        test $${fn}_npos -eq $argv[2]
    end
end

function ${fn}_at_any
    ${fn}_state
    contains -- "$${fn}_path" $argv
end

# Names only ${prog} knows (profiles, environments, hosts, tags), asked with a short timeout.
function ${fn}_dynamic
    command -q ${prog}; or return
    ${prog} __complete $argv[1] (commandline -ct) 2>/dev/null
end

# No file names unless an option or argument asks for them.
complete -c ${prog} -f

${globalLines.join('\n')}

${lines.join('\n')}
`;
}
