import type { Command } from 'commander';

export function registerConfig(program: Command): void {
  void program;
}
