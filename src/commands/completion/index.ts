// `fleetctl completion bash|zsh|fish`: the completion script, generated from this binary's own
// command tree by the same code as the checked-in files, so the two cannot disagree. The
// generator is imported only here (a lazy chunk): other commands do not pay for it at start-up.
import { Argument, type Command } from 'commander';
import { verb } from '../define.js';
import { SHELLS, type Shell } from '../../gen/shells.js';

export function registerCompletion(program: Command): void {
  verb(
    program,
    {
      name: 'completion',
      summary: 'Print the shell completion script for bash, zsh or fish',
      description:
        'Print a completion script on standard output. It completes commands, options,\n' +
        'and the values of options and arguments that have a fixed set (--status,\n' +
        '--platform, -o, --sort, enroll targets, ...). Install it once, then start a\n' +
        'new shell:\n' +
        '\n' +
        'bash, with the bash-completion package:\n' +
        '  fleetctl completion bash > ~/.local/share/bash-completion/completions/fleetctl\n' +
        'bash, without it: put this line in ~/.bashrc\n' +
        '  source <(fleetctl completion bash)\n' +
        'zsh: write it into a directory of $fpath, e.g.\n' +
        '  mkdir -p ~/.zfunc && fleetctl completion zsh > ~/.zfunc/_fleetctl\n' +
        '  and in ~/.zshrc, before compinit runs: fpath=(~/.zfunc $fpath)\n' +
        'zsh, or instead: put this line in ~/.zshrc, after compinit\n' +
        '  source <(fleetctl completion zsh)\n' +
        'fish:\n' +
        '  fleetctl completion fish > ~/.config/fish/completions/fleetctl.fish\n' +
        '\n' +
        'The npm package also ships the same scripts in its completions/ directory.',
      examples: [
        'fleetctl completion bash > ~/.local/share/bash-completion/completions/fleetctl',
        'fleetctl completion zsh > ~/.zfunc/_fleetctl',
        'fleetctl completion fish > ~/.config/fish/completions/fleetctl.fish',
      ],
    },
    (cmd) => cmd.addArgument(new Argument('<shell>', 'the shell to complete in').choices(SHELLS)),
    async (ctx, [shell]) => {
      const [{ readProgram }, { completionScript }] = await Promise.all([import('../../gen/model.js'), import('../../gen/completions.js')]);
      ctx.io.out(completionScript(shell as Shell, readProgram(program)));
    },
  );
}
