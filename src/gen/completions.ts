// Shell completion scripts, generated from the command tree (static: no call to the server).
import type { ProgramSpec } from './model.js';
import { bashCompletion } from './bash.js';
import { zshCompletion } from './zsh.js';
import { fishCompletion } from './fish.js';
import type { Shell } from './shells.js';

export { SHELLS, COMPLETION_FILES, type Shell } from './shells.js';

const generators: Record<Shell, (p: ProgramSpec) => string> = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion };

export function completionScript(shell: Shell, program: ProgramSpec): string {
  return generators[shell](program);
}
