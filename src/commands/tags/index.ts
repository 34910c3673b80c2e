import type { Command } from 'commander';

export function registerTags(program: Command): void {
  void program;
}
