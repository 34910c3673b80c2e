// Completion cases derived from the command tree itself, so every option and argument with a
// fixed set of values is checked in every shell, whatever commands the tree holds today.
import { allCommands, optionNames, optionsAt, type ProgramSpec } from '../../src/gen/model.js';

export interface Case {
  line: string;
  expected: string[];
}

const sorted = (xs: readonly string[]): string[] => [...new Set(xs)].sort();

export function treeCases(p: ProgramSpec): Case[] {
  const cases: Case[] = [];
  const cmds = allCommands(p.root);
  // Subcommands of the program and of every group.
  for (const c of [p.root, ...cmds]) {
    if (c.commands.length) cases.push({ line: ['fleetctl', ...c.path, ''].join(' '), expected: sorted(c.commands.map((s) => s.name)) });
  }
  for (const c of cmds) {
    // Values of the command's own options, by each of its names.
    for (const o of c.options) {
      if (!o.choices) continue;
      for (const n of optionNames(o)) cases.push({ line: ['fleetctl', ...c.path, n, ''].join(' '), expected: sorted(o.choices) });
    }
    // Values of positional arguments (earlier positions filled with a word).
    c.args.forEach((a, i) => {
      if (a.choices)
        cases.push({ line: ['fleetctl', ...c.path, ...Array<string>(i).fill('x'), ''].join(' '), expected: sorted(a.choices) });
    });
    // An alias reaches the same command: its long options.
    for (const alias of c.aliases) {
      const path = [...c.path.slice(0, -1), alias];
      const longs = optionsAt(p, c)
        .flatMap(optionNames)
        .filter((n) => n.startsWith('--'));
      cases.push({ line: ['fleetctl', ...path, '--'].join(' '), expected: sorted(longs) });
    }
  }
  // Global options with choices, before any command and after the deepest verb.
  const deepest = cmds.filter((c) => !c.commands.length && !c.implicitHelp).sort((a, b) => b.path.length - a.path.length)[0];
  for (const o of p.globals) {
    if (!o.choices) continue;
    for (const n of optionNames(o)) {
      cases.push({ line: `fleetctl ${n} `, expected: sorted(o.choices) });
      cases.push({ line: ['fleetctl', ...deepest.path, n, ''].join(' '), expected: sorted(o.choices) });
    }
  }
  return cases;
}

/** The cases whose result differs from the expected one, for a readable failure. */
export function mismatches(cases: Case[], results: string[][]): { line: string; expected: string[]; got: string[] }[] {
  return cases.flatMap((c, i) =>
    JSON.stringify(c.expected) === JSON.stringify(results[i]) ? [] : [{ line: c.line, expected: c.expected, got: results[i] }],
  );
}
