// Where examples come from, read from their one source each: the command tree's `examples`
// (what --help prints), the generated man pages as man(1) renders them, and the README (its
// shell and console blocks, and the commands quoted in its text and tables).
import type { Command } from 'commander';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fullProgram } from '../../../src/program.js';
import { allCommands, readProgram } from '../../../src/gen/model.js';

export const ROOT = resolve(import.meta.dirname, '../../..');

export interface Example {
  /** The command line, exactly as the user reads it. */
  text: string;
  /** Where it is shown: `fleetctl nodes list --help`, `man/fleetctl-nodes.1`, `README.md:98`. */
  where: string[];
}

function collect(pairs: [string, string][]): Example[] {
  const byText = new Map<string, Example>();
  for (const [text, where] of pairs) {
    const e = byText.get(text) ?? { text, where: [] };
    if (!e.where.includes(where)) e.where.push(where);
    byText.set(text, e);
  }
  return [...byText.values()];
}

/** Every example of every command's --help, once each (a group repeats its verbs' examples). */
export async function helpExamples(): Promise<Example[]> {
  const spec = readProgram(await fullProgram());
  const pairs: [string, string][] = [];
  for (const c of [spec.root, ...allCommands(spec.root)]) {
    for (const text of c.examples) pairs.push([text, `fleetctl ${c.path.join(' ')} --help`.replace('  ', ' ')]);
  }
  return collect(pairs);
}

/** The `$ ...` lines of every page in man/, as man(1) renders them (wide, so nothing wraps). */
export function manExamples(): Example[] {
  const dir = join(ROOT, 'man');
  const pairs: [string, string][] = [];
  for (const page of readdirSync(dir)
    .filter((f) => f.endsWith('.1'))
    .sort()) {
    const text = execFileSync('man', ['-l', '-E', 'UTF-8', join(dir, page)], {
      env: { ...process.env, MANWIDTH: '1000', MANPAGER: 'cat', PAGER: 'cat', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      encoding: 'utf8',
    });
    for (const m of text.matchAll(/^ +\$ (.+?)\s*$/gm)) pairs.push([m[1], `man/${page}`]);
  }
  return collect(pairs);
}

/** `fleetctl` as a command word: at the start, after a pipe, `&&`, `;`, `$(` or `VAR=value `. */
const INVOKES = /(^|[|;&(]\s*|^\w+=\S+\s+)fleetctl(\s|$)/;
const invokesFleetctl = (line: string): boolean => INVOKES.test(line.trim());

/** What a README example's `where` says when its block is one test/e2e/deploy-real-agent.test.ts runs. */
export const DEPLOY_BLOCK = /\(deploy:([a-z]+)\)$/;

/**
 * The README's examples: lines of ```sh and ```console blocks (console: the `$ ` lines) and the
 * `run:` lines of its YAML that run fleetctl, and every `fleetctl ...` quoted in its text and
 * tables (a quote may run over a line break). A quote that only names a command (`fleetctl
 * nodes`, `fleetctl server`) is not one. A block after a `<!-- deploy:NAME -->` marker is one of
 * "Running it in production"'s steps: its `where` ends with `(deploy:NAME)`.
 */
export function readmeExamples(commandNames: Set<string>): Example[] {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n');
  const pairs: [string, string][] = [];
  let block: string | undefined;
  let deploy: string | undefined;
  let pending = '';
  // The prose paragraph being read (quotes are taken from whole paragraphs): its first line's index.
  let prose: string[] = [];
  let proseStart = 0;
  const endProse = () => {
    const text = prose.join('\n');
    for (const m of text.matchAll(/`([^`]+)`/g)) {
      const line = proseStart + text.slice(0, m.index).split('\n').length;
      const quoted = m[1].replace(/\s*\n\s*/g, ' ').replace(/\\\|/g, '|');
      if (invokesFleetctl(quoted) && !isCommandName(quoted, commandNames)) pairs.push([quoted, `README.md:${line}`]);
    }
    prose = [];
  };
  lines.forEach((line, i) => {
    const fence = /^```(\w*)/.exec(line);
    const marker = /^<!-- deploy:([a-z]+) -->$/.exec(line);
    if (fence || marker || (block === undefined && line.trim() === '')) endProse();
    const where = `README.md:${i + 1}${block !== undefined && deploy ? ` (deploy:${deploy})` : ''}`;
    if (marker) {
      deploy = marker[1];
      return;
    }
    if (fence) {
      if (block !== undefined) deploy = undefined;
      block = block === undefined ? fence[1] || 'text' : undefined;
      pending = '';
      return;
    }
    if (block === undefined) {
      deploy = undefined;
      if (line.trim() !== '') {
        if (!prose.length) proseStart = i;
        prose.push(line);
      }
      return;
    }
    let cmd: string | undefined;
    if (block === 'console') cmd = /^\$ (.*)$/.exec(line)?.[1];
    else if (block === 'sh' || block === 'bash') cmd = line;
    else if (block === 'yaml') cmd = /^\s*(?:-\s+)?run:\s+(.*)$/.exec(line)?.[1];
    if (cmd === undefined) return;
    // A line continued with a backslash is one command.
    if (/\\$/.test(cmd)) {
      pending += `${cmd.replace(/\\$/, '').trim()} `;
      return;
    }
    const full = (pending + cmd.trim()).replace(/\s+#[^'"]*$/, '').trim();
    pending = '';
    if (full && !full.startsWith('#') && invokesFleetctl(full)) pairs.push([full, where]);
  });
  endProse();
  return collect(pairs);
}

/** `fleetctl`, `fleetctl nodes`, `fleetctl auth login`: a name, not a command to run. */
function isCommandName(text: string, commandNames: Set<string>): boolean {
  return text.split(' ').every((w, i) => (i === 0 ? w === 'fleetctl' : commandNames.has(w)));
}

/** Every command and group name (aliases and hidden ones included), to tell a quoted name from an example. */
export async function commandNames(): Promise<Set<string>> {
  const names = new Set<string>();
  const walk = (c: Command): void => {
    for (const sub of c.commands) {
      for (const n of [sub.name(), ...sub.aliases()]) names.add(n);
      walk(sub);
    }
  };
  walk(await fullProgram());
  return names;
}
