// Everything `npm run gen` writes: completion scripts and man pages, by path in the package.
import type { Command } from 'commander';
import { readProgram } from './model.js';
import { COMPLETION_FILES, SHELLS, completionScript } from './completions.js';
import { manPages } from './man.js';

export { fullProgram } from '../program.js';

/** Relative path (completions/..., man/...) -> file content. */
export function generateFiles(program: Command): Map<string, string> {
  const spec = readProgram(program);
  const files = new Map<string, string>();
  for (const shell of SHELLS) files.set(COMPLETION_FILES[shell], completionScript(shell, spec));
  for (const [name, text] of manPages(spec)) files.set(`man/${name}`, text);
  return files;
}
