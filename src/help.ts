// How --help reads, kubectl style: a group lists its verbs first; global flags are not repeated
// under every command (20 lines before the 3 verbs of `fleetctl nodes`) but listed once by
// `fleetctl options`; descriptions are plain paragraphs that commander flows to the terminal
// width (a hard line break inside a paragraph was wrapped a second time, ragged at 80 columns).
import { Help, type Command } from 'commander';

export const GLOBAL_OPTIONS_HINT = 'Run `fleetctl options` for the global options (--env, --profile, -o, ...).';

/**
 * One paragraph per blank-line-separated block: single line breaks inside it become spaces.
 * A block with an indented line (commands to copy, a list) is kept as written.
 */
export function flow(text: string): string {
  return text
    .split(/\n[ \t]*\n/)
    .map((p) => (/^[ \t]/m.test(p) ? p : p.replace(/[ \t]*\n[ \t]*/g, ' ').trim()))
    .join('\n\n');
}

/** Moves the "Commands:" section of a group's help right after its description. */
function verbsFirst(text: string, cmd: Command): string {
  if (cmd.commands.length === 0 || !cmd.parent) return text;
  const blocks = text.trimEnd().split(/\n\n+/);
  const i = blocks.findIndex((b) => b.startsWith('Commands:'));
  const o = blocks.findIndex((b) => b.startsWith('Options:') || b.startsWith('Arguments:'));
  if (i < 0 || o < 0 || i < o) return text;
  const [commands] = blocks.splice(i, 1);
  blocks.splice(o, 0, commands);
  return `${blocks.join('\n\n')}\n`;
}

export const helpConfig = {
  sortSubcommands: false,
  showGlobalOptions: false,
  formatHelp(cmd: Command, helper: Help): string {
    const text = verbsFirst(Help.prototype.formatHelp.call(helper, cmd, helper), cmd);
    return cmd.parent ? `${text.trimEnd()}\n\n${GLOBAL_OPTIONS_HINT}\n` : text;
  },
};

/** The root program's options, as `fleetctl options` prints them. */
export function globalOptionsText(program: Command): string {
  const helper = program.createHelp();
  const text = Help.prototype.formatHelp.call(helper, program, helper);
  const options = text.split('\n\n').find((b) => b.startsWith('Options:')) ?? '';
  return `The following options can be passed to any command:\n\n${options.replace(/^Options:\n/, '')}\n`;
}
