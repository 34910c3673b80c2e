// bash completion script: the tree becomes `case` tables (bash 3.2 has no associative arrays),
// walked by one function that follows the words typed so far the way commander parses them.
import { allCommands, optionNames, optionsAt, type ArgSpec, type CommandSpec, type ProgramSpec } from './model.js';
import { GENERATED_NOTE } from './note.js';

/** 'it''s' quoting for bash: the text between single quotes, with ' closed and escaped. */
export function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const key = (c: CommandSpec): string => c.path.join(' ');

/** What a value (of an option or argument) completes to: ':file', ':dyn:KIND', the choices, or nothing. */
function valueWords(v: { choices?: string[]; file: boolean; dynamic?: string }): string {
  return v.file ? ':file' : v.dynamic ? `:dyn:${v.dynamic}` : (v.choices ?? []).join(' ');
}

/** `case` arms with identical bodies merged: [[pattern, body]] -> lines. */
function caseArms(arms: [string, string][], indent: string): string[] {
  const byBody = new Map<string, string[]>();
  for (const [pattern, body] of arms) byBody.set(body, [...(byBody.get(body) ?? []), pattern]);
  return [...byBody].map(([body, patterns]) => `${indent}${patterns.join('|')}) ${body} ;;`);
}

function argArm(args: ArgSpec[]): string | undefined {
  const arms: [string, string][] = [];
  args.forEach((a, i) => {
    const words = valueWords(a);
    if (!words) return;
    arms.push([a.variadic ? `${i}|[1-9]*` : String(i), `REPLY=${sq(words)}`]);
  });
  if (!arms.length) return undefined;
  return `case $2 in ${arms.map(([p, b]) => `${p}) ${b} ;;`).join(' ')} *) return 1 ;; esac`;
}

type Arms = [string, string][];

/** The case arms of the lookup functions: what each command accepts, from the command tree. */
function bashArms(p: ProgramSpec) {
  const cmds = [p.root, ...allCommands(p.root)];
  const subArms: Arms = [];
  const subsArms: Arms = [];
  const optsArms: Arms = [];
  const valueArms: Arms = [];
  const globalValueArms: Arms = [];
  const argArms: Arms = [];
  for (const c of cmds) {
    for (const s of c.commands) {
      for (const n of [s.name, ...s.aliases]) subArms.push([sq(`${key(c)}|${n}`), `REPLY=${sq(key(s))}`]);
    }
    if (c.commands.length) subsArms.push([sq(key(c)), `REPLY=${sq(c.commands.map((s) => s.name).join(' '))}`]);
    const opts = optionsAt(p, c);
    optsArms.push([sq(key(c)), `REPLY=${sq(opts.flatMap(optionNames).join(' '))}`]);
    // A command's own option wins over a global one of the same name, so list its own first;
    // the global arms below use a wildcard command.
    const globalNames = new Set(p.globals.flatMap(optionNames));
    for (const o of c.options) {
      for (const n of optionNames(o)) {
        if (o.valueName) valueArms.push([sq(`${key(c)}|${n}`), `REPLY=${sq(valueWords(o))}`]);
        else if (globalNames.has(n)) valueArms.push([sq(`${key(c)}|${n}`), 'return 1']);
      }
    }
    const arm = argArm(c.args);
    if (arm) argArms.push([sq(key(c)), arm]);
  }
  for (const o of p.globals) {
    if (!o.valueName) continue;
    for (const n of optionNames(o)) globalValueArms.push([`*${sq(`|${n}`)}`, `REPLY=${sq(valueWords(o))}`]);
  }

  return { subArms, subsArms, optsArms, valueArms, globalValueArms, argArms };
}

export function bashCompletion(p: ProgramSpec): string {
  const fn = `__${p.name.replace(/\W/g, '_')}`;
  return (
    `# bash completion for ${p.name}
${GENERATED_NOTE.map((l) => `# ${l}`).join('\n')}
#
# Install: ${p.name} completion bash > ~/.local/share/bash-completion/completions/${p.name}
#      or: source <(${p.name} completion bash)     (in ~/.bashrc)

` +
    lookupFunctions(fn, bashArms(p)) +
    completionFunction(p.name, fn)
  );
}

/** One shell function per question the completer asks of the command tree (a case statement each). */
function lookupFunctions(
  fn: string,
  { subArms, subsArms, optsArms, valueArms, globalValueArms, argArms }: ReturnType<typeof bashArms>,
): string {
  return `# The command reached by subcommand $2 (a name or an alias) of command "$1", in REPLY.
${fn}_sub() {
  case "$1|$2" in
${caseArms(subArms, '    ').join('\n')}
    *) return 1 ;;
  esac
}

# The subcommand names of command "$1", in REPLY.
${fn}_subs() {
  REPLY=
  case "$1" in
${caseArms(subsArms, '    ').join('\n')}
  esac
}

# The options accepted by command "$1" (its own, then the global ones), in REPLY.
${fn}_opts() {
  REPLY=
  case "$1" in
${caseArms(optsArms, '    ').join('\n')}
  esac
}

# Whether option $2 of command "$1" takes a value; REPLY: its choices, ':file', or empty.
${fn}_optval() {
  case "$1|$2" in
${[...caseArms(valueArms, '    '), ...caseArms(globalValueArms, '    ')].join('\n')}
    *) return 1 ;;
  esac
}

# Completions for positional argument $2 (from 0) of command "$1", in REPLY.
${fn}_argval() {
  case "$1" in
${caseArms(argArms, '    ').join('\n')}
    *) return 1 ;;
  esac
}

`;
}

/** The completer itself: follows the words before the cursor as commander does, then asks the lookups. */
function completionFunction(name: string, fn: string): string {
  return `# COMPREPLY from compgen, one match a line, so file names with spaces stay whole.
${fn}_reply() {
  local line
  COMPREPLY=()
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$@")
}

# Completes the value "$2" of an option or argument from REPLY (set by _optval/_argval), with prefix "$1".
${fn}_value() {
  if [[ $REPLY == :file ]]; then
    compopt -o filenames 2>/dev/null
    ${fn}_reply -f -P "$1" -- "$2"
  elif [[ $REPLY == :dyn:* ]]; then
    # Names only fleetctl knows (profiles, environments, hosts, tags): asked with a short timeout.
    ${fn}_reply -W "$(${name} __complete "\${REPLY#:dyn:}" "$2" 2>/dev/null)" -P "$1" -- "$2"
  else
    ${fn}_reply -W "$REPLY" -P "$1" -- "$2"
  fi
}

_${name.replace(/\W/g, '_')}() {
  local words=() cword=0 i w path= npos=0 dashdash=0 valopt= cur REPLY
  # bash splits "--status=active" at "=" (COMP_WORDBREAKS): put such words back together.
  for ((i = 0; i < \${#COMP_WORDS[@]}; i++)); do
    w=\${COMP_WORDS[i]}
    if ((i > 0)) && [[ $w == = && \${words[\${#words[@]}-1]} == --* && \${words[\${#words[@]}-1]} != *=* ]]; then
      words[\${#words[@]}-1]+=$w
      if ((i + 1 < \${#COMP_WORDS[@]})) && ((i + 1 <= COMP_CWORD)); then
        i=$((i + 1))
        words[\${#words[@]}-1]+=\${COMP_WORDS[i]}
      fi
    else
      words+=("$w")
    fi
    ((i == COMP_CWORD)) && cword=$((\${#words[@]} - 1))
  done
  if ((COMP_CWORD >= \${#COMP_WORDS[@]})); then
    words+=('')
    cword=$((\${#words[@]} - 1))
  fi
  cur=\${words[cword]}

  # Follow the words before the cursor as commander does: subcommands, options and their values, arguments.
  for ((i = 1; i < cword; i++)); do
    w=\${words[i]}
    if ((dashdash)); then
      npos=$((npos + 1))
    elif [[ $w == -- ]]; then
      dashdash=1
    elif [[ $w == -* ]]; then
      if [[ $w != *=* ]] && ${fn}_optval "$path" "$w"; then
        ((i + 1 == cword)) && valopt=$w
        i=$((i + 1))
      fi
    elif ((npos == 0)) && ${fn}_sub "$path" "$w"; then
      path=$REPLY
    else
      npos=$((npos + 1))
    fi
  done

  if [[ -n $valopt ]]; then
    ${fn}_optval "$path" "$valopt"
    ${fn}_value '' "$cur"
    return 0
  fi
  if ((!dashdash)) && [[ $cur == --*=* ]]; then
    ${fn}_optval "$path" "\${cur%%=*}" || return 0
    # With "=" in COMP_WORDBREAKS bash replaces only the part after it.
    if [[ $COMP_WORDBREAKS == *=* ]]; then ${fn}_value '' "\${cur#*=}"; else ${fn}_value "\${cur%%=*}=" "\${cur#*=}"; fi
    return 0
  fi
  if ((!dashdash)) && [[ $cur == -* ]]; then
    ${fn}_opts "$path"
    ${fn}_reply -W "$REPLY" -- "$cur"
    return 0
  fi
  if ((npos == 0)); then
    ${fn}_subs "$path"
    if [[ -n $REPLY ]]; then
      ${fn}_reply -W "$REPLY" -- "$cur"
      return 0
    fi
  fi
  ${fn}_argval "$path" "$npos" && ${fn}_value '' "$cur"
  return 0
}

complete -F _${name.replace(/\W/g, '_')} ${name}
`;
}
