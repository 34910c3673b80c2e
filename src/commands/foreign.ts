// Spellings users bring from the tools they already know (kubectl, Fleet DM's fleetctl, gh),
// turned into a `hint:` line naming our command when commander does not know theirs. The
// command is not run for them: a guess that runs the wrong verb is worse than a hint.

/** kubectl / Fleet DM resource names -> our group. */
const RESOURCES: Record<string, string> = {
  host: 'nodes',
  hosts: 'nodes',
  node: 'nodes',
  nodes: 'nodes',
  query: 'query',
  queries: 'query',
  campaign: 'query',
  campaigns: 'query',
  carve: 'carves',
  carves: 'carves',
  user: 'users',
  users: 'users',
  label: 'tags',
  labels: 'tags',
  tag: 'tags',
  tags: 'tags',
  team: 'env',
  teams: 'env',
  environment: 'env',
  environments: 'env',
  env: 'env',
  envs: 'env',
  activity: 'audit',
  activities: 'audit',
  'enroll-secret': 'enroll',
  enroll_secret: 'enroll',
};

/** The words of argv before the first option. */
function words(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    if (a.startsWith('-')) break;
    out.push(a);
  }
  return out;
}

/**
 * A hint for an unknown command, or undefined. `args` are the user's arguments (no node, no
 * script). Only spellings we recognise get a hint; commander's own "Did you mean" covers typos.
 */
export function foreignCommandHint(args: readonly string[]): string | undefined {
  const w = words(args);
  const [first, second, third] = w;
  if (!first) return undefined;
  if ((first === 'get' || first === 'describe') && second) {
    const group = RESOURCES[second.toLowerCase()];
    if (!group) return undefined;
    if (group === 'audit') return 'fleetctl audit list';
    if (group === 'enroll') return 'fleetctl enroll show ENV secret';
    if (third || first === 'describe') return `fleetctl ${group} show ${third ?? 'NAME'}`;
    return `fleetctl ${group} list`;
  }
  if (first === 'config') {
    switch (second) {
      case 'use-context':
        return `fleetctl config use ${third ?? 'PROFILE'} (profiles are fleetctl's contexts)`;
      case 'get-contexts':
        return "fleetctl config list (profiles are fleetctl's contexts)";
      case 'current-context':
        return 'fleetctl config show';
      case 'set-context':
        return 'fleetctl config set url|env|username VALUE --profile NAME';
      default:
        return undefined;
    }
  }
  // Fleet DM: `fleetctl query --query SQL --hosts a,b`; gh: `gh auth login`, `gh version`.
  if (first === 'query' && !second) return 'fleetctl query run "SQL" --target HOST (repeatable)';
  if (first === 'delete' && second && RESOURCES[second.toLowerCase()])
    return `fleetctl ${RESOURCES[second.toLowerCase()]} delete ${third ?? 'NAME'}`;
  if (first === 'whoami') return 'fleetctl users me';
  if (first === 'status') return 'fleetctl auth status';
  return undefined;
}
