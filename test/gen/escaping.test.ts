// The generators on a made-up tree full of characters that each output language treats
// specially: every script must still parse and complete, every page render without warnings.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Argument, Command, Option } from 'commander';
import { group, verb } from '../../src/commands/define.js';
import { readProgram } from '../../src/gen/model.js';
import { bashCompletion } from '../../src/gen/bash.js';
import { zshCompletion } from '../../src/gen/zsh.js';
import { fishCompletion } from '../../src/gen/fish.js';
import { manPages, roffText } from '../../src/gen/man.js';
import { bashComplete, fishComplete, requireTool, zshComplete } from './shells.js';

const NASTY = `it's [a] "test": back\\slash $HOME \`cmd\` 100% naïve — ok`;

function nastyProgram(): Command {
  const program = new Command('fleetctl').description(NASTY).version('9.9.9', '-V, --version');
  program.addOption(new Option('-o, --output <format>', NASTY).choices(['table', 'json']));
  program.option('--debug', `.starts with a dot; ${NASTY}`);
  const g = group(program, {
    name: 'we-ird',
    summary: `'quoted' group: ${NASTY}`,
    description: `.Leading dot\n'leading quote\n\n  indented $ line\\n`,
    examples: [`fleetctl we-ird run --mode 'a b' "x\\y"`, '.dotted example'],
  });
  verb(
    g,
    { name: 'run', aliases: ['r:n'], summary: `run: ${NASTY}`, examples: [`fleetctl we-ird run --mode fast -- -x`] },
    (cmd) =>
      cmd
        .addOption(new Option('--mode <mode>', `mode [${NASTY}]`).choices(['fast', 'slow', 'enroll.sh', 'a:b']))
        .addOption(new Option('-f, --file <path>', NASTY))
        .option('--output <fmt>', 'a verb option shadowing a global one')
        .option('-y, --yes', NASTY)
        .addArgument(new Argument('<target>', NASTY).choices(['secret', 'flags.Linux']))
        .addArgument(new Argument('[rest...]', NASTY)),
    async () => {},
  );
  return program;
}

let dir: string;
beforeAll(() => {
  for (const t of ['bash', 'zsh', 'fish', 'man', 'groff']) requireTool(t);
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-esc-'));
  const p = readProgram(nastyProgram());
  writeFileSync(join(dir, 'fleetctl.bash'), bashCompletion(p));
  mkdirSync(join(dir, 'zsh'));
  writeFileSync(join(dir, 'zsh', '_fleetctl'), zshCompletion(p));
  writeFileSync(join(dir, 'fleetctl.fish'), fishCompletion(p));
  for (const [name, text] of manPages(p)) writeFileSync(join(dir, name), text);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('escaping', () => {
  test('roffText escapes what roff would read as markup', () => {
    expect(roffText("a-b \\n it's `x`")).toBe('a\\-b \\en it\\(aqs \\(gax\\(ga');
    expect(roffText('naïve — ok')).toBe('na\\[u00EF]ve \\[u2014] ok');
  });

  test('the scripts parse', async () => {
    for (const [cmd, args] of [
      ['bash', ['-n', join(dir, 'fleetctl.bash')]],
      ['zsh', ['-n', join(dir, 'zsh', '_fleetctl')]],
      ['fish', ['--no-execute', join(dir, 'fleetctl.fish')]],
    ] as const) {
      const r = await execa(cmd, args, { reject: false });
      expect(r.stderr, cmd).toBe('');
      expect(r.exitCode, cmd).toBe(0);
    }
  });

  const lines = ['fleetctl we-ird run --mode ', 'fleetctl we-ird r:n ', 'fleetctl we-ird run x --output ', 'fleetctl -o '];
  const expected = [['a:b', 'enroll.sh', 'fast', 'slow'], ['flags.Linux', 'secret'], [], ['json', 'table']];

  test('bash completes values, aliases and a verb option that shadows a global', async () => {
    // bash splits "r:n" at ":" (COMP_WORDBREAKS) too: the alias is checked through fish and zsh.
    const r = await bashComplete([lines[0], lines[2], lines[3]], { file: join(dir, 'fleetctl.bash') });
    expect(r).toEqual([expected[0], expected[2], expected[3]]);
  });

  test('fish completes them', async () => {
    expect(await fishComplete(lines, { file: join(dir, 'fleetctl.fish') })).toEqual(expected);
  });

  test('zsh completes them', async () => {
    const r = await zshComplete([lines[0], lines[1], lines[3]], { dir: join(dir, 'zsh') });
    expect(r).toEqual([expected[0], expected[1], expected[3]]);
  });

  test('the pages render without warnings and show the text as written', async () => {
    for (const page of ['fleetctl.1', 'fleetctl-we-ird.1']) {
      const r = await execa('man', ['--warnings', '-l', '-E', 'UTF-8', join(dir, page)], {
        env: { MANWIDTH: '200', MANPAGER: 'cat', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      });
      expect(r.stderr, page).toBe('');
      const text = r.stdout.replace(/\s+/g, ' ');
      expect(text, page).toContain(NASTY.replace(/\s+/g, ' '));
      if (page !== 'fleetctl.1') {
        expect(text).toContain('.Leading dot');
        expect(r.stdout).toContain(`$ fleetctl we-ird run --mode 'a b' "x\\y"`);
        expect(r.stdout).toContain('$ .dotted example');
        expect(r.stdout).toMatch(/^ +indented \$ line\\n$/m);
      }
    }
  });
});
