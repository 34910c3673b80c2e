import type { Command } from 'commander';

export function registerStats(program: Command): void {
  void program;
}
