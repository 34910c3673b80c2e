// Asks real shells what they complete for command lines, using the checked-in scripts. Every
// helper runs all its lines in ONE shell process (the machine has 2 cores) and returns, per
// line, the sorted list of candidates.
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fullProgram } from '../../src/program.js';
import { readProgram, type ProgramSpec } from '../../src/gen/model.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BASH_FILE = resolve(ROOT, 'completions/fleetctl.bash');
export const FISH_FILE = resolve(ROOT, 'completions/fleetctl.fish');
export const ZSH_DIR = resolve(ROOT, 'completions');
export const APT_PACKAGES = 'bash-completion zsh fish man-db groff-base';

/** A missing shell is a real failure (CI installs them), with the fix in the message. */
export function requireTool(name: string): void {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`${name} is not installed: apt-get install -y --no-install-recommends ${APT_PACKAGES}`);
  }
}

/** The command tree, read the same way the generator reads it. */
export async function tree(): Promise<ProgramSpec> {
  return readProgram(await fullProgram());
}

const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
const SEP = '\x1e';

function splitResults(stdout: string, count: number): string[][] {
  const parts = stdout.split(`${SEP}\n`).slice(0, count);
  if (parts.length !== count) throw new Error(`expected ${count} results, got ${parts.length}:\n${stdout}`);
  return parts.map((p) => [...new Set(p.split('\n').filter(Boolean))].sort());
}

/**
 * Words as bash hands them to a completion function: split at blanks, and at "=" (which is in
 * COMP_WORDBREAKS), with an empty word when the line ends in a blank.
 */
export function bashWords(line: string): string[] {
  const words = line
    .split(/\s+/)
    .filter(Boolean)
    .flatMap((w) => w.split(/(=)/).filter(Boolean));
  if (/\s$/.test(line)) words.push('');
  return words;
}

/**
 * Sources `file` in `bash --norc`, then for each line sets COMP_WORDS/COMP_CWORD/COMP_LINE/
 * COMP_POINT and calls the function that `complete -p fleetctl` names; prints COMPREPLY.
 */
export async function bashComplete(lines: string[], o: { file?: string; cwd?: string; preamble?: string } = {}): Promise<string[][]> {
  const calls = lines.map((line) => {
    const words = bashWords(line);
    return [
      `COMP_WORDS=(${words.map(sq).join(' ')}); COMP_CWORD=${words.length - 1}`,
      `COMP_LINE=${sq(line)}; COMP_POINT=\${#COMP_LINE}; COMPREPLY=()`,
      `"$fn" fleetctl "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"`,
      `printf '%s\\n' "\${COMPREPLY[@]}"; printf '${SEP}\\n'`,
    ].join('\n');
  });
  const script = [
    o.preamble ?? `source ${sq(o.file ?? BASH_FILE)}`,
    'spec=$(complete -p fleetctl) || exit 9',
    'fn=${spec#*-F }; fn=${fn%% *}',
    ...calls,
  ].join('\n');
  const r = await execa('bash', ['--norc', '--noprofile', '-c', script], { cwd: o.cwd, reject: false, env: { HOME: o.cwd ?? ROOT } });
  if (r.exitCode !== 0 || r.stderr) throw new Error(`bash failed (${r.exitCode}): ${r.stderr}`);
  return splitResults(r.stdout + '\n', lines.length);
}

/** `complete -C LINE` in `fish --no-config` after sourcing the script; candidates without descriptions. */
export async function fishComplete(lines: string[], o: { cwd?: string; file?: string } = {}): Promise<string[][]> {
  const fq = (s: string): string => `'${s.replace(/[\\']/g, '\\$&')}'`;
  const script = [`source ${fq(o.file ?? FISH_FILE)}`, ...lines.map((l) => `complete -C ${fq(l)}; printf '%s\\n' \\x1e`)].join('\n');
  const r = await execa('fish', ['--no-config', '-c', script], { cwd: o.cwd, reject: false });
  if (r.exitCode !== 0 || r.stderr) throw new Error(`fish failed (${r.exitCode}): ${r.stderr}`);
  return splitResults(r.stdout + '\n', lines.length).map((c) => [...new Set(c.map((x) => x.split('\t')[0]))].sort());
}

/** Types each line plus TAB into an interactive zsh (zpty) with the directory in $fpath. */
export async function zshComplete(lines: string[], o: { dir?: string; cwd?: string; source?: string } = {}): Promise<string[][]> {
  const r = await execa('zsh', ['-f', resolve(import.meta.dirname, 'zsh-complete.zsh'), o.dir ?? ZSH_DIR, ...lines], {
    cwd: o.cwd,
    env: { COMP_SOURCE: o.source ?? '' },
    reject: false,
    timeout: 60_000,
  });
  if (r.exitCode !== 0 || r.stderr) throw new Error(`zsh failed (${r.exitCode}): ${r.stderr}`);
  return splitResults(r.stdout + '\n', lines.length);
}
