# bash completion for fleetctl
# Generated from the command tree by `npm run gen` (scripts/gen.mjs): do not edit.
#
# Install: fleetctl completion bash > ~/.local/share/bash-completion/completions/fleetctl
#      or: source <(fleetctl completion bash)     (in ~/.bashrc)

# The command reached by subcommand $2 (a name or an alias) of command "$1", in REPLY.
__fleetctl_sub() {
  case "$1|$2" in
    '|login') REPLY='login' ;;
    '|logout') REPLY='logout' ;;
    '|auth') REPLY='auth' ;;
    '|mfa') REPLY='mfa' ;;
    '|users') REPLY='users' ;;
    '|env') REPLY='env' ;;
    '|schedule') REPLY='schedule' ;;
    '|enroll') REPLY='enroll' ;;
    '|tags') REPLY='tags' ;;
    '|nodes') REPLY='nodes' ;;
    '|settings') REPLY='settings' ;;
    '|query') REPLY='query' ;;
    '|carves') REPLY='carves' ;;
    '|logs') REPLY='logs' ;;
    '|sinks') REPLY='sinks' ;;
    '|audit') REPLY='audit' ;;
    '|stats') REPLY='stats' ;;
    '|apply') REPLY='apply' ;;
    '|diff') REPLY='diff' ;;
    '|api') REPLY='api' ;;
    '|config') REPLY='config' ;;
    '|completion') REPLY='completion' ;;
    '|version') REPLY='version' ;;
    '|server') REPLY='server' ;;
    '|options') REPLY='options' ;;
    '|help') REPLY='help' ;;
    'auth|login') REPLY='auth login' ;;
    'auth|logout') REPLY='auth logout' ;;
    'auth|status') REPLY='auth status' ;;
    'auth|token') REPLY='auth token' ;;
    'auth|help') REPLY='auth help' ;;
    'mfa|status') REPLY='mfa status' ;;
    'mfa|totp') REPLY='mfa totp' ;;
    'mfa|recovery-codes') REPLY='mfa recovery-codes' ;;
    'mfa|webauthn') REPLY='mfa webauthn' ;;
    'mfa|help') REPLY='mfa help' ;;
    'mfa totp|setup'|'mfa totp|enable') REPLY='mfa totp setup' ;;
    'mfa totp|confirm') REPLY='mfa totp confirm' ;;
    'mfa totp|disable'|'mfa totp|off') REPLY='mfa totp disable' ;;
    'mfa totp|help') REPLY='mfa totp help' ;;
    'mfa recovery-codes|regenerate') REPLY='mfa recovery-codes regenerate' ;;
    'mfa recovery-codes|help') REPLY='mfa recovery-codes help' ;;
    'mfa webauthn|list'|'mfa webauthn|ls') REPLY='mfa webauthn list' ;;
    'mfa webauthn|show'|'mfa webauthn|get') REPLY='mfa webauthn show' ;;
    'mfa webauthn|remove'|'mfa webauthn|rm'|'mfa webauthn|delete') REPLY='mfa webauthn remove' ;;
    'mfa webauthn|help') REPLY='mfa webauthn help' ;;
    'users|list'|'users|ls') REPLY='users list' ;;
    'users|show'|'users|get') REPLY='users show' ;;
    'users|me'|'users|whoami') REPLY='users me' ;;
    'users|add'|'users|create') REPLY='users add' ;;
    'users|edit'|'users|update') REPLY='users edit' ;;
    'users|remove'|'users|rm'|'users|delete') REPLY='users remove' ;;
    'users|passwd') REPLY='users passwd' ;;
    'users|help') REPLY='users help' ;;
    'env|list'|'env|ls') REPLY='env list' ;;
    'env|show'|'env|get') REPLY='env show' ;;
    'env|intervals') REPLY='env intervals' ;;
    'env|map') REPLY='env map' ;;
    'env|create'|'env|add') REPLY='env create' ;;
    'env|edit') REPLY='env edit' ;;
    'env|delete'|'env|rm') REPLY='env delete' ;;
    'env|config') REPLY='env config' ;;
    'env|help') REPLY='env help' ;;
    'schedule|list'|'schedule|ls') REPLY='schedule list' ;;
    'schedule|show'|'schedule|get') REPLY='schedule show' ;;
    'schedule|add'|'schedule|create') REPLY='schedule add' ;;
    'schedule|edit'|'schedule|update') REPLY='schedule edit' ;;
    'schedule|remove'|'schedule|rm'|'schedule|delete') REPLY='schedule remove' ;;
    'schedule|report') REPLY='schedule report' ;;
    'schedule|help') REPLY='schedule help' ;;
    'enroll|extend') REPLY='enroll extend' ;;
    'enroll|expire') REPLY='enroll expire' ;;
    'enroll|rotate') REPLY='enroll rotate' ;;
    'enroll|notexpire') REPLY='enroll notexpire' ;;
    'enroll|update') REPLY='enroll update' ;;
    'enroll|show'|'enroll|get') REPLY='enroll show' ;;
    'enroll|help') REPLY='enroll help' ;;
    'tags|list'|'tags|ls') REPLY='tags list' ;;
    'tags|show'|'tags|get') REPLY='tags show' ;;
    'tags|add'|'tags|create') REPLY='tags add' ;;
    'tags|edit'|'tags|update') REPLY='tags edit' ;;
    'tags|remove'|'tags|rm'|'tags|delete') REPLY='tags remove' ;;
    'tags|apply') REPLY='tags apply' ;;
    'tags|unapply'|'tags|untag') REPLY='tags unapply' ;;
    'tags|help') REPLY='tags help' ;;
    'nodes|list'|'nodes|ls') REPLY='nodes list' ;;
    'nodes|show'|'nodes|get') REPLY='nodes show' ;;
    'nodes|delete'|'nodes|rm') REPLY='nodes delete' ;;
    'nodes|help') REPLY='nodes help' ;;
    'settings|list'|'settings|ls') REPLY='settings list' ;;
    'settings|set') REPLY='settings set' ;;
    'settings|help') REPLY='settings help' ;;
    'query|run') REPLY='query run' ;;
    'query|list'|'query|ls') REPLY='query list' ;;
    'query|show'|'query|get') REPLY='query show' ;;
    'query|results') REPLY='query results' ;;
    'query|cancel'|'query|expire') REPLY='query cancel' ;;
    'query|help') REPLY='query help' ;;
    'carves|list'|'carves|ls') REPLY='carves list' ;;
    'carves|show'|'carves|get') REPLY='carves show' ;;
    'carves|run') REPLY='carves run' ;;
    'carves|download') REPLY='carves download' ;;
    'carves|delete'|'carves|rm') REPLY='carves delete' ;;
    'carves|expire') REPLY='carves expire' ;;
    'carves|complete') REPLY='carves complete' ;;
    'carves|archive') REPLY='carves archive' ;;
    'carves|help') REPLY='carves help' ;;
    'sinks|list'|'sinks|ls') REPLY='sinks list' ;;
    'sinks|show'|'sinks|get') REPLY='sinks show' ;;
    'sinks|clone'|'sinks|copy') REPLY='sinks clone' ;;
    'sinks|add'|'sinks|create') REPLY='sinks add' ;;
    'sinks|remove'|'sinks|rm'|'sinks|delete') REPLY='sinks remove' ;;
    'sinks|edit') REPLY='sinks edit' ;;
    'sinks|enable') REPLY='sinks enable' ;;
    'sinks|disable') REPLY='sinks disable' ;;
    'sinks|test') REPLY='sinks test' ;;
    'sinks|help') REPLY='sinks help' ;;
    'audit|list'|'audit|ls') REPLY='audit list' ;;
    'audit|show'|'audit|get') REPLY='audit show' ;;
    'audit|help') REPLY='audit help' ;;
    'config|list'|'config|ls') REPLY='config list' ;;
    'config|use') REPLY='config use' ;;
    'config|show'|'config|get') REPLY='config show' ;;
    'config|remove'|'config|rm') REPLY='config remove' ;;
    'config|set') REPLY='config set' ;;
    'config|help') REPLY='config help' ;;
    'server|backup') REPLY='server backup' ;;
    'server|migrate') REPLY='server migrate' ;;
    *) return 1 ;;
  esac
}

# The subcommand names of command "$1", in REPLY.
__fleetctl_subs() {
  REPLY=
  case "$1" in
    '') REPLY='login logout auth mfa users env schedule enroll tags nodes settings query carves logs sinks audit stats apply diff api config completion version server options help' ;;
    'auth') REPLY='login logout status token help' ;;
    'mfa') REPLY='status totp recovery-codes webauthn help' ;;
    'mfa totp') REPLY='setup confirm disable help' ;;
    'mfa recovery-codes') REPLY='regenerate help' ;;
    'mfa webauthn') REPLY='list show remove help' ;;
    'users') REPLY='list show me add edit remove passwd help' ;;
    'env') REPLY='list show intervals map create edit delete config help' ;;
    'schedule') REPLY='list show add edit remove report help' ;;
    'enroll') REPLY='extend expire rotate notexpire update show help' ;;
    'tags') REPLY='list show add edit remove apply unapply help' ;;
    'nodes') REPLY='list show delete help' ;;
    'settings') REPLY='list set help' ;;
    'query') REPLY='run list show results cancel help' ;;
    'carves') REPLY='list show run download delete expire complete archive help' ;;
    'sinks') REPLY='list show clone add remove edit enable disable test help' ;;
    'audit') REPLY='list show help' ;;
    'config') REPLY='list use show remove set help' ;;
    'server') REPLY='backup migrate' ;;
  esac
}

# The options accepted by command "$1" (its own, then the global ones), in REPLY.
__fleetctl_opts() {
  REPLY=
  case "$1" in
    ''|'logout'|'auth'|'auth logout'|'auth status'|'auth token'|'mfa'|'mfa status'|'mfa totp'|'mfa recovery-codes'|'mfa webauthn'|'mfa webauthn list'|'mfa webauthn show'|'users'|'users show'|'users me'|'env'|'env map'|'schedule'|'enroll'|'enroll extend'|'enroll notexpire'|'enroll show'|'tags'|'nodes'|'settings'|'settings set'|'query'|'query show'|'query results'|'carves'|'carves show'|'carves complete'|'carves archive'|'sinks'|'sinks show'|'sinks enable'|'sinks disable'|'sinks test'|'audit'|'audit show'|'config'|'config list'|'config use'|'config show'|'config remove'|'config set'|'completion'|'options') REPLY='-h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'login'|'auth login') REPLY='-u --username --password-stdin --exp-hours --totp-code --recovery-code --mfa-code-stdin --mfa-method -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'auth help'|'mfa totp help'|'mfa recovery-codes help'|'mfa webauthn help'|'mfa help'|'users help'|'env help'|'schedule help'|'enroll help'|'tags help'|'nodes help'|'settings help'|'query help'|'carves help'|'sinks help'|'audit help'|'config help'|'help') REPLY='-V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'mfa totp setup') REPLY='--code-stdin -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'mfa totp confirm') REPLY='--code --code-stdin -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'mfa totp disable'|'users passwd') REPLY='--password-stdin -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'mfa recovery-codes regenerate'|'mfa webauthn remove') REPLY='-y --yes --password-stdin -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'users list'|'tags list'|'settings list'|'sinks list'|'stats') REPLY='-w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'users add') REPLY='--email --fullname --environment --level --admin --no-admin --service --no-service --api --no-api --password-stdin -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'users edit') REPLY='--email --fullname --environment --level --admin --no-admin --service --no-service --api --no-api --password-stdin --set-password -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'users remove'|'env delete'|'enroll expire'|'enroll rotate'|'tags remove'|'nodes delete'|'carves delete'|'carves expire'|'sinks remove') REPLY='-y --yes -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env list') REPLY='--show-secret -w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env show'|'nodes show') REPLY='--show-secret -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env intervals') REPLY='--config --log --query -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env create') REPLY='--agent-host --config --log --query --detail-refresh --enroll --no-enroll --enroll-window -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env edit') REPLY='--agent-host --config --log --query --detail-refresh --enroll --no-enroll --name --follow-server -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'env config') REPLY='--edit --set --agent -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule list') REPLY='--pack -w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule show') REPLY='--pack -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule add') REPLY='--query --query-file --interval --platform --min-version --shard --description --pack --snapshot --no-removed --no-denylist -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule edit') REPLY='--query --query-file --interval --platform --min-version --shard --description --pack --snapshot --no-snapshot --removed --no-removed --denylist --no-denylist -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule remove') REPLY='--pack -y --yes -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'schedule report') REPLY='--pack --node --limit --all --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'enroll update') REPLY='--certificate --deb-url --rpm-url --msi-url --pkg-url -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'tags show') REPLY='--nodes --all -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'tags add'|'tags edit') REPLY='-d --description --color --icon --type --custom -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'tags apply'|'tags unapply') REPLY='-q --search --status --platform --risk --health -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'nodes list') REPLY='--status --platform --risk --health -t --tag -q --search --config-stale --sort --order --page --page-size --limit --all -w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'query run') REPLY='-t --target --wait --exit --detach --expire --hidden -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'query list') REPLY='--status --page --page-size --limit --all -w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'query cancel') REPLY='--all-mine -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'carves list') REPLY='--status -q --search --page --page-size --limit --all -w --watch --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'carves run') REPLY='-t --target --wait --exit --detach --expire -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'carves download') REPLY='-O --output-file --node --session -f --force -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'logs') REPLY='--type --query --pack --node --since --until --severity -q --search --limit --all -f --follow --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'sinks clone') REPLY='--from --to --overwrite -y --yes -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'sinks add') REPLY='--name --type --source --info --disabled --order --config -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'sinks edit') REPLY='--set --unset --config --name --info --order --source --enable --disable -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'audit list') REPLY='-q --search --service --user --page --page-size --limit --all -f --follow --interval --no-pager -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'apply') REPLY='-f --file -R --recursive --dry-run --prune -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'diff') REPLY='-f --file -R --recursive --prune -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'api') REPLY='-f --raw-field -F --field --input --paginate -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'version') REPLY='--client -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'server') REPLY='--listen --db --db-pool --db-ca --trust-proxy --dev --dev-password --dev-nodes --dev-agents --admin-password-stdin --admin-username --create-env --login-rate-limit --api-rate-limit --denied-rate-limit --account-login-limit --request-timeout --headers-timeout --keep-alive-timeout --agent-keep-alive-timeout --shutdown-grace --fix-permissions --tls-cert --tls-key --agent-listen --agent-tls-cert --agent-tls-key --agent-url --agent-ca --enroll-window --detail-refresh --log --sink-dir --sink-backlog-size --sink-backlog-age --carve-max-size --agent-max-in-flight --metrics-listen --workers -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'server backup') REPLY='--db -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
    'server migrate') REPLY='--db --db-ca --dry-run -h --help -V --version --url --env --profile -o --output --json --fields --jq --no-headers --time --no-color --timeout --ca-file --insecure --insecure-storage --server-flavor --debug' ;;
  esac
}

# Whether option $2 of command "$1" takes a value; REPLY: its choices, ':file', or empty.
__fleetctl_optval() {
  case "$1|$2" in
    'login|-u'|'login|--username'|'login|--exp-hours'|'login|--totp-code'|'login|--recovery-code'|'auth login|-u'|'auth login|--username'|'auth login|--exp-hours'|'auth login|--totp-code'|'auth login|--recovery-code'|'mfa totp confirm|--code'|'users list|-w'|'users list|--watch'|'users add|--email'|'users add|--fullname'|'users add|--level'|'users edit|--email'|'users edit|--fullname'|'users edit|--level'|'env list|-w'|'env list|--watch'|'env intervals|--config'|'env intervals|--log'|'env intervals|--query'|'env create|--agent-host'|'env create|--config'|'env create|--log'|'env create|--query'|'env create|--detail-refresh'|'env create|--enroll-window'|'env edit|--agent-host'|'env edit|--config'|'env edit|--log'|'env edit|--query'|'env edit|--detail-refresh'|'env edit|--name'|'env config|--set'|'schedule list|--pack'|'schedule list|-w'|'schedule list|--watch'|'schedule show|--pack'|'schedule add|--query'|'schedule add|--interval'|'schedule add|--platform'|'schedule add|--min-version'|'schedule add|--shard'|'schedule add|--description'|'schedule add|--pack'|'schedule edit|--query'|'schedule edit|--interval'|'schedule edit|--platform'|'schedule edit|--min-version'|'schedule edit|--shard'|'schedule edit|--description'|'schedule edit|--pack'|'schedule remove|--pack'|'schedule report|--pack'|'schedule report|--limit'|'enroll update|--deb-url'|'enroll update|--rpm-url'|'enroll update|--msi-url'|'enroll update|--pkg-url'|'tags list|-w'|'tags list|--watch'|'tags add|-d'|'tags add|--description'|'tags add|--color'|'tags add|--icon'|'tags add|--custom'|'tags edit|-d'|'tags edit|--description'|'tags edit|--color'|'tags edit|--icon'|'tags edit|--custom'|'tags apply|-q'|'tags apply|--search'|'tags unapply|-q'|'tags unapply|--search'|'nodes list|-q'|'nodes list|--search'|'nodes list|--page'|'nodes list|--page-size'|'nodes list|--limit'|'nodes list|-w'|'nodes list|--watch'|'settings list|-w'|'settings list|--watch'|'query run|-t'|'query run|--target'|'query run|--wait'|'query run|--expire'|'query list|--page'|'query list|--page-size'|'query list|--limit'|'query list|-w'|'query list|--watch'|'carves list|-q'|'carves list|--search'|'carves list|--page'|'carves list|--page-size'|'carves list|--limit'|'carves list|-w'|'carves list|--watch'|'carves run|-t'|'carves run|--target'|'carves run|--wait'|'carves run|--expire'|'carves download|--session'|'logs|--pack'|'logs|--since'|'logs|--until'|'logs|-q'|'logs|--search'|'logs|--limit'|'sinks list|-w'|'sinks list|--watch'|'sinks add|--name'|'sinks add|--info'|'sinks add|--order'|'sinks add|--config'|'sinks edit|--set'|'sinks edit|--unset'|'sinks edit|--config'|'sinks edit|--name'|'sinks edit|--info'|'sinks edit|--order'|'audit list|-q'|'audit list|--search'|'audit list|--service'|'audit list|--user'|'audit list|--page'|'audit list|--page-size'|'audit list|--limit'|'audit list|--interval'|'stats|-w'|'stats|--watch'|'api|-f'|'api|--raw-field'|'api|-F'|'api|--field'|'server|--listen'|'server|--db-pool'|'server|--trust-proxy'|'server|--dev-password'|'server|--dev-nodes'|'server|--dev-agents'|'server|--admin-username'|'server|--create-env'|'server|--login-rate-limit'|'server|--api-rate-limit'|'server|--denied-rate-limit'|'server|--account-login-limit'|'server|--request-timeout'|'server|--headers-timeout'|'server|--keep-alive-timeout'|'server|--agent-keep-alive-timeout'|'server|--shutdown-grace'|'server|--agent-listen'|'server|--agent-url'|'server|--agent-ca'|'server|--enroll-window'|'server|--detail-refresh'|'server|--sink-backlog-size'|'server|--sink-backlog-age'|'server|--carve-max-size'|'server|--agent-max-in-flight'|'server|--metrics-listen'|'server|--workers') REPLY='' ;;
    'login|--mfa-method'|'auth login|--mfa-method') REPLY='totp recovery' ;;
    'users add|--environment'|'users edit|--environment'|'sinks clone|--from'|'sinks clone|--to') REPLY=':dyn:env' ;;
    'schedule add|--query-file'|'schedule edit|--query-file'|'enroll update|--certificate'|'carves download|-O'|'carves download|--output-file'|'apply|-f'|'apply|--file'|'diff|-f'|'diff|--file'|'api|--input'|'server|--db'|'server|--db-ca'|'server|--tls-cert'|'server|--tls-key'|'server|--agent-tls-cert'|'server|--agent-tls-key'|'server|--sink-dir'|'server backup|--db'|'server migrate|--db'|'server migrate|--db-ca') REPLY=':file' ;;
    'schedule report|--node'|'carves download|--node'|'logs|--node') REPLY=':dyn:node' ;;
    'tags add|--type'|'tags edit|--type') REPLY='env platform custom unknown tag' ;;
    'tags apply|--status'|'tags unapply|--status'|'nodes list|--status') REPLY='all active inactive' ;;
    'tags apply|--platform'|'tags unapply|--platform'|'nodes list|--platform') REPLY='linux darwin windows other' ;;
    'tags apply|--risk'|'tags unapply|--risk'|'nodes list|--risk') REPLY='low medium high unknown' ;;
    'tags apply|--health'|'tags unapply|--health'|'nodes list|--health') REPLY='healthy degraded unhealthy unknown' ;;
    'nodes list|-t'|'nodes list|--tag') REPLY=':dyn:tag' ;;
    'nodes list|--sort') REPLY='hostname localname uuid ip platform version osquery lastseen firstseen' ;;
    'nodes list|--order') REPLY='asc desc' ;;
    'query list|--status') REPLY='active completed expired deleted' ;;
    'carves list|--status') REPLY='active pending completed expired deleted' ;;
    'logs|--type') REPLY='result status' ;;
    'logs|--query') REPLY=':dyn:scheduled-query' ;;
    'logs|--severity') REPLY='info warning error fatal' ;;
    'sinks add|--type') REPLY='file stdout syslog http kafka kinesis firehose s3 splunk elastic graylog logstash' ;;
    'sinks add|--source'|'sinks edit|--source') REPLY='status result query' ;;
    *'|--url'|*'|--fields'|*'|--jq'|*'|--timeout'|*'|--server-flavor') REPLY='' ;;
    *'|--env') REPLY=':dyn:env' ;;
    *'|--profile') REPLY=':dyn:profile' ;;
    *'|-o'|*'|--output') REPLY='table wide json jsonl yaml csv' ;;
    *'|--time') REPLY='relative local rfc3339' ;;
    *'|--ca-file') REPLY=':file' ;;
    *) return 1 ;;
  esac
}

# Completions for positional argument $2 (from 0) of command "$1", in REPLY.
__fleetctl_argval() {
  case "$1" in
    'auth help') case $2 in 0) REPLY='login logout status token' ;; *) return 1 ;; esac ;;
    'mfa totp help') case $2 in 0) REPLY='setup confirm disable' ;; *) return 1 ;; esac ;;
    'mfa recovery-codes help') case $2 in 0) REPLY='regenerate' ;; *) return 1 ;; esac ;;
    'mfa webauthn help') case $2 in 0) REPLY='list show remove' ;; *) return 1 ;; esac ;;
    'mfa help') case $2 in 0) REPLY='status totp recovery-codes webauthn' ;; *) return 1 ;; esac ;;
    'users help') case $2 in 0) REPLY='list show me add edit remove passwd' ;; *) return 1 ;; esac ;;
    'env show'|'env intervals'|'env edit'|'env delete'|'env config'|'schedule list'|'schedule add'|'enroll extend'|'enroll expire'|'enroll rotate'|'enroll notexpire'|'enroll update'|'sinks list'|'sinks add') case $2 in 0) REPLY=':dyn:env' ;; *) return 1 ;; esac ;;
    'env help') case $2 in 0) REPLY='list show intervals map create edit delete config' ;; *) return 1 ;; esac ;;
    'schedule show'|'schedule edit'|'schedule report') case $2 in 0) REPLY=':dyn:env' ;; 1) REPLY=':dyn:scheduled-query' ;; *) return 1 ;; esac ;;
    'schedule remove') case $2 in 0) REPLY=':dyn:env' ;; 1|[1-9]*) REPLY=':dyn:scheduled-query' ;; *) return 1 ;; esac ;;
    'schedule help') case $2 in 0) REPLY='list show add edit remove report' ;; *) return 1 ;; esac ;;
    'enroll show') case $2 in 0) REPLY=':dyn:env' ;; 1) REPLY='secret cert flags flagsLinux flagsMac flagsWindows flagsFreeBSD enroll.sh enroll.ps1 remove.sh remove.ps1' ;; *) return 1 ;; esac ;;
    'enroll help') case $2 in 0) REPLY='extend expire rotate notexpire update show' ;; *) return 1 ;; esac ;;
    'tags apply'|'tags unapply') case $2 in 0) REPLY=':dyn:tag' ;; *) return 1 ;; esac ;;
    'tags help') case $2 in 0) REPLY='list show add edit remove apply unapply' ;; *) return 1 ;; esac ;;
    'nodes show') case $2 in 0) REPLY=':dyn:node' ;; *) return 1 ;; esac ;;
    'nodes delete') case $2 in 0|[1-9]*) REPLY=':dyn:node' ;; *) return 1 ;; esac ;;
    'nodes help') case $2 in 0) REPLY='list show delete' ;; *) return 1 ;; esac ;;
    'settings list') case $2 in 0) REPLY='tls admin api' ;; 1) REPLY=':dyn:env' ;; *) return 1 ;; esac ;;
    'settings set') case $2 in 0) REPLY='tls admin api' ;; *) return 1 ;; esac ;;
    'settings help') case $2 in 0) REPLY='list set' ;; *) return 1 ;; esac ;;
    'query help') case $2 in 0) REPLY='run list show results cancel' ;; *) return 1 ;; esac ;;
    'carves help') case $2 in 0) REPLY='list show run download delete expire complete archive' ;; *) return 1 ;; esac ;;
    'sinks show'|'sinks edit'|'sinks enable'|'sinks disable'|'sinks test') case $2 in 1) REPLY=':dyn:env' ;; *) return 1 ;; esac ;;
    'sinks help') case $2 in 0) REPLY='list show clone add remove edit enable disable test' ;; *) return 1 ;; esac ;;
    'audit help') case $2 in 0) REPLY='list show' ;; *) return 1 ;; esac ;;
    'config help') case $2 in 0) REPLY='list use show remove set' ;; *) return 1 ;; esac ;;
    'completion') case $2 in 0) REPLY='bash zsh fish' ;; *) return 1 ;; esac ;;
    'help') case $2 in 0) REPLY='login logout auth mfa users env schedule enroll tags nodes settings query carves logs sinks audit stats apply diff api config completion version server options' ;; *) return 1 ;; esac ;;
    *) return 1 ;;
  esac
}

# COMPREPLY from compgen, one match a line, so file names with spaces stay whole.
__fleetctl_reply() {
  local line
  COMPREPLY=()
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$@")
}

# Completes the value "$2" of an option or argument from REPLY (set by _optval/_argval), with prefix "$1".
__fleetctl_value() {
  if [[ $REPLY == :file ]]; then
    compopt -o filenames 2>/dev/null
    __fleetctl_reply -f -P "$1" -- "$2"
  elif [[ $REPLY == :dyn:* ]]; then
    # Names only fleetctl knows (profiles, environments, hosts, tags): asked with a short timeout.
    __fleetctl_reply -W "$(fleetctl __complete "${REPLY#:dyn:}" "$2" 2>/dev/null)" -P "$1" -- "$2"
  else
    __fleetctl_reply -W "$REPLY" -P "$1" -- "$2"
  fi
}

_fleetctl() {
  local words=() cword=0 i w path= npos=0 dashdash=0 valopt= cur REPLY
  # bash splits "--status=active" at "=" (COMP_WORDBREAKS): put such words back together.
  for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
    w=${COMP_WORDS[i]}
    if ((i > 0)) && [[ $w == = && ${words[${#words[@]}-1]} == --* && ${words[${#words[@]}-1]} != *=* ]]; then
      words[${#words[@]}-1]+=$w
      if ((i + 1 < ${#COMP_WORDS[@]})) && ((i + 1 <= COMP_CWORD)); then
        i=$((i + 1))
        words[${#words[@]}-1]+=${COMP_WORDS[i]}
      fi
    else
      words+=("$w")
    fi
    ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
  done
  if ((COMP_CWORD >= ${#COMP_WORDS[@]})); then
    words+=('')
    cword=$((${#words[@]} - 1))
  fi
  cur=${words[cword]}

  # Follow the words before the cursor as commander does: subcommands, options and their values, arguments.
  for ((i = 1; i < cword; i++)); do
    w=${words[i]}
    if ((dashdash)); then
      npos=$((npos + 1))
    elif [[ $w == -- ]]; then
      dashdash=1
    elif [[ $w == -* ]]; then
      if [[ $w != *=* ]] && __fleetctl_optval "$path" "$w"; then
        ((i + 1 == cword)) && valopt=$w
        i=$((i + 1))
      fi
    elif ((npos == 0)) && __fleetctl_sub "$path" "$w"; then
      path=$REPLY
    else
      npos=$((npos + 1))
    fi
  done

  if [[ -n $valopt ]]; then
    __fleetctl_optval "$path" "$valopt"
    __fleetctl_value '' "$cur"
    return 0
  fi
  if ((!dashdash)) && [[ $cur == --*=* ]]; then
    __fleetctl_optval "$path" "${cur%%=*}" || return 0
    # With "=" in COMP_WORDBREAKS bash replaces only the part after it.
    if [[ $COMP_WORDBREAKS == *=* ]]; then __fleetctl_value '' "${cur#*=}"; else __fleetctl_value "${cur%%=*}=" "${cur#*=}"; fi
    return 0
  fi
  if ((!dashdash)) && [[ $cur == -* ]]; then
    __fleetctl_opts "$path"
    __fleetctl_reply -W "$REPLY" -- "$cur"
    return 0
  fi
  if ((npos == 0)); then
    __fleetctl_subs "$path"
    if [[ -n $REPLY ]]; then
      __fleetctl_reply -W "$REPLY" -- "$cur"
      return 0
    fi
  fi
  __fleetctl_argval "$path" "$npos" && __fleetctl_value '' "$cur"
  return 0
}

complete -F _fleetctl fleetctl
