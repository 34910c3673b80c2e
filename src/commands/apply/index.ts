// `fleetctl apply -f` and `fleetctl diff -f` (issue 22): environments' osquery configuration
// as files (documents.ts), the way kubectl applies manifests: a readable diff first, every
// document checked (here, then by the server) before anything changes, idempotent.
import type { Command } from 'commander';
import { verb } from '../define.js';
import type { FileOpts } from './options.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function registerApply(program: Command): void {
  verb<FileOpts>(
    program,
    {
      name: 'apply',
      summary: 'Apply osquery configuration files to environments (GitOps)',
      description:
        "Make environments' osquery configuration (options, schedule, packs, decorators, atc) what the files say.\n" +
        'A file holds one or more documents (YAML separated by ---, or JSON):\n\n' +
        '  apiVersion: fleetctl/v1\n  kind: OsqueryConfig\n  metadata:\n    environment: prod\n  spec:\n    schedule:\n' +
        '      users_query:\n        query: SELECT uid, username FROM users\n        interval: 300\n\n' +
        'Every document is checked first (shapes, names, intervals, SQL), then the diff of each environment is shown,\n' +
        'then the server checks the changes and only then are they stored; one problem anywhere changes nothing.\n' +
        'Entries the files list are added or replaced; entries on the server they do not list stay, unless --prune\n' +
        '(then each part a document names becomes exactly what it lists). Applying the same files again changes\n' +
        'nothing. `fleetctl env config ENV -o yaml` prints a document that applies back unchanged. Needs env admin.',
      examples: [
        'fleetctl apply -f prod.yaml',
        'fleetctl apply -f config/ --dry-run',
        'fleetctl apply -f config/ -R --prune',
        'fleetctl env config prod -o yaml > prod.yaml && fleetctl apply -f prod.yaml',
      ],
    },
    (cmd) =>
      cmd
        .requiredOption('-f, --file <path>', 'a file, a directory of .yaml/.yml/.json files, or - for stdin (repeatable)', collect)
        .option('-R, --recursive', 'read directories below the given ones too')
        .option('--dry-run', 'show the diff and have the server check the changes; store nothing')
        .option('--prune', 'remove the entries of each named part that the files do not list'),
    async (ctx, _args, o) => (await import('./run.js')).runApply(ctx, o),
  );

  verb<FileOpts>(
    program,
    {
      name: 'diff',
      summary: 'Show what `apply -f` would change; exit 1 when it would change something',
      description:
        "Compare the files with the environments' osquery configuration on the server and print a unified diff\n" +
        '(server, then files) of each environment that differs. Exits 0 when nothing differs, 1 when something\n' +
        'does (as `kubectl diff`, for CI), and 2 or more on an error (a file that does not hold exits 2).',
      examples: ['fleetctl diff -f prod.yaml', 'fleetctl diff -f config/ --prune || echo "drift"'],
    },
    (cmd) =>
      cmd
        .requiredOption('-f, --file <path>', 'a file, a directory of .yaml/.yml/.json files, or - for stdin (repeatable)', collect)
        .option('-R, --recursive', 'read directories below the given ones too')
        .option('--prune', 'compare as `apply --prune` would apply'),
    async (ctx, _args, o) => (await import('./run.js')).runDiff(ctx, o),
  );
}
