import type { Command } from 'commander';

export function registerSettings(program: Command): void {
  void program;
}
