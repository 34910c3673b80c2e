// Entry point: parse argv, run the command, map every failure to one line and an exit code.
import { CommanderError } from 'commander';
import { buildProgram } from './program.js';
import { loadGroups } from './commands/index.js';
import { ExitCode, mapError } from './errors.js';
import { safeText } from './output/sanitize.js';
import { foreignCommandHint } from './commands/foreign.js';
import { runEarlyExitHooks } from './lib/exit-hooks.js';

function writeError(message: string, hint?: string): void {
  // Messages carry server text (error messages, names): never a control sequence on the terminal.
  process.stderr.write(`error: ${safeText(message)}\n${hint ? `hint: ${safeText(hint)}\n` : ''}`);
}

async function main(argv: string[]): Promise<number> {
  // Ctrl-C outside a prompt: quiet exit 130. Commands that handle SIGINT themselves (the server
  // drains requests) register their own listener, and then this one steps aside.
  process.on('SIGINT', () => {
    if (process.listenerCount('SIGINT') > 1) return;
    process.exit(ExitCode.interrupted);
  });
  // `fleetctl ... | head` closes stdout early: not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    // A live query this command started is still cancelled before the exit (exit-hooks.ts).
    if (e.code === 'EPIPE') void runEarlyExitHooks().finally(() => process.exit(0));
    else throw e;
  });

  const args = argv.slice(2);
  const program = buildProgram(await loadGroups(args));
  // Bare `fleetctl` is a request for help, not a mistake: on stdout, exit 0 (as gh and kubectl).
  if (args.length === 0) {
    process.stdout.write(program.helpInformation());
    return ExitCode.ok;
  }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(e.code)) return ExitCode.ok;
      // commander already printed the message and the usage hint; a spelling from kubectl or
      // Fleet DM's fleetctl gets the command to use instead.
      if (e.code === 'commander.unknownCommand' || e.code === 'commander.unknownOption') {
        const hint = foreignCommandHint(args);
        if (hint) process.stderr.write(`hint: ${hint}\n`);
      }
      return ExitCode.usage;
    }
    const m = mapError(e);
    if (m.exitCode === ExitCode.interrupted) return m.exitCode;
    writeError(m.message, m.hint);
    if (process.env.FLEETCTL_DEBUG_STACK && e instanceof Error) process.stderr.write(`${e.stack}\n`);
    return m.exitCode;
  }
}

// No top-level await: the build is a CommonJS script (scripts/build.mjs).
void main(process.argv).then((code) => {
  // Let stdout drain before exiting (large JSON into a pipe).
  process.stdout.write('', () => process.exit(code));
});
