// The command tree: global options and the groups given (commands/index.ts: every group, or the
// one a command line names). fullProgram() is what scripts/gen.mjs generates completions and man
// pages from.
import { Command, Option } from 'commander';
import { loadGroups, type Register } from './commands/index.js';
import { globalOptionsText, helpConfig } from './help.js';
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;

/** The whole tree: every group. */
export async function fullProgram(): Promise<Command> {
  return buildProgram(await loadGroups());
}

export function buildProgram(groups: Register[]): Command {
  const program = new Command('fleetctl')
    .description('Administer a fleet of osquery endpoint agents through the Fleet Management API.')
    .version(VERSION, '-V, --version')
    .option('--url <url>', "server URL (env FLEETCTL_URL; default: the profile's)")
    .option('--env <env>', 'environment name or UUID (env FLEETCTL_ENV)')
    .option('--profile <name>', 'profile to use (env FLEETCTL_PROFILE)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'wide', 'json', 'jsonl', 'yaml', 'csv']))
    .option('--json', 'shorthand for -o json')
    .option('--fields <list>', 'comma-separated fields to show (dotted paths allowed)')
    .option('--jq <expr>', 'filter JSON output with a jq expression (built in)')
    .option('--no-headers', 'omit table and csv headers')
    .addOption(
      new Option('--time <style>', 'times in tables: relative (default), local clock, or rfc3339').choices([
        'relative',
        'local',
        'rfc3339',
      ]),
    )
    .option('--no-color', 'disable colors (also NO_COLOR)')
    .option('--timeout <duration>', 'HTTP timeout per request (30s, 2m)', '30s')
    .option('--ca-file <file>', 'extra CA certificates (PEM) to trust')
    .option('--insecure', 'skip TLS certificate verification and allow plain http:// to a non-loopback host (unsafe)')
    .option('--insecure-storage', 'login: save the token in a 0600 file instead of the OS keychain')
    .option('--server-flavor <flavor>', 'what the server is: fleet or osctrl (default: learned at login; env FLEETCTL_SERVER_FLAVOR)')
    .option('--debug', 'log HTTP requests and responses on stderr (secrets redacted)')
    .showHelpAfterError('(run with --help for usage)')
    .configureHelp(helpConfig)
    .exitOverride();
  for (const register of groups) register(program);
  // Hidden: what the generated completion scripts call for names only fleetctl knows.
  program
    .command('__complete', { hidden: true })
    .argument('<kind>')
    .argument('[prefix]', '', '')
    .action(async (kind: string, prefix: string) => {
      const { Context } = await import('./context.js');
      const { completeValues, COMPLETION_TIMEOUT } = await import('./commands/completion/dynamic.js');
      const globals = program.opts();
      const ctx = new Context({ ...globals, timeout: COMPLETION_TIMEOUT });
      const values = await completeValues(ctx, kind, prefix).catch(() => []);
      process.stdout.write(
        values
          .filter((v) => v.startsWith(prefix))
          .map((v) => `${v}\n`)
          .join(''),
      );
    });
  program
    .command('options')
    .description('List the global options, which every command accepts')
    .action(() => void process.stdout.write(globalOptionsText(program)));
  return program;
}
