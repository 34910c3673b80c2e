import type { Command } from 'commander';

export function registerMfa(program: Command): void {
  void program;
}
