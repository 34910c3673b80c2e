import type { Command } from 'commander';

export function registerCarves(program: Command): void {
  void program;
}
