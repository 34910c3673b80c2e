import type { Command } from 'commander';

export function registerCompletion(program: Command): void {
  void program;
}
