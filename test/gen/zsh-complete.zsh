# Completes command lines in a real interactive zsh and prints the matches of each, one a
# line, each line's list ended by a line holding only \x1e (record separator).
#   zsh -f test/gen/zsh-complete.zsh FPATH_DIR 'fleetctl nodes list --status ' 'fleetctl no' ...
# With COMP_SOURCE=FILE in the environment, FILE is also sourced after compinit.
# zsh completes only inside its line editor, so an interactive `zsh -f -i` runs on a
# pseudo-terminal (zpty), each line is typed into it followed by TAB, and compadd is wrapped to
# record what the completion functions offer (after matching against the word at the cursor).
zmodload zsh/zpty || { print -u2 'zsh/zpty module missing'; exit 2 }
zmodload zsh/zselect || { print -u2 'zsh/zselect module missing'; exit 2 }
emulate -L zsh
export COMP_DIR=$1
shift
local line start=$'\x02' end=$'\x03'

# Runs inside the interactive shell. Markers are printed from pieces so that the echo of the
# typed command itself never matches them.
local setup=$(mktemp) && trap "rm -f ${(q)setup}" EXIT
cat >$setup <<'SETUP'
fpath=($COMP_DIR $fpath)
autoload -Uz compinit && compinit -u -D
# The other way to install it: sourced after compinit (source <(fleetctl completion zsh)).
[[ -n $COMP_SOURCE ]] && source $COMP_SOURCE
typeset -ga comp_matches=()
compadd() {
  local -a got
  builtin compadd -O got "$@"
  comp_matches+=("${got[@]}")
  builtin compadd "$@"
}
comp_widget() {
  comp_matches=()
  _main_complete
  print -n -- $'\x02'
  print -rl -- "${(@u)comp_matches}"
  print -n -- $'\x03'
  # Neither insert nor list anything: the harness clears the line (^U) and types the next one.
  compstate[insert]=''
  compstate[list]=''
}
zle -C comp-widget complete-word comp_widget
bindkey '^I' comp-widget
PS1='READY''> '
print 'SETUP''DONE'
SETUP

# Reads the pty until the output so far matches the pattern $1 (or 10 s pass); output in REPLY.
read_until() {
  local chunk out=''
  integer deadline=$(( SECONDS + 10 ))
  while (( SECONDS < deadline )); do
    while zpty -r -t comp chunk; do out+=$chunk; done
    if [[ $out == $~1 ]]; then REPLY=$out; return 0; fi
    zselect -t 2
  done
  print -u2 -r -- "timed out waiting for $1; the terminal showed: ${(q)out}"
  return 1
}

zpty comp zsh -f -i
zpty -w comp "source ${(q)setup}"
read_until '*SETUPDONE*READY> *' || exit 3
local out
for line; do
  zpty -w -n comp "$line"$'\t'
  read_until "*${end}*" || exit 3
  out=${REPLY#*$start}
  out=${out%%$end*}
  print -r -- ${out//$'\r'/}$'\x1e'
  zpty -w -n comp $'\x15'
done
zpty -d comp
