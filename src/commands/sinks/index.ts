import type { Command } from 'commander';

export function registerSinks(program: Command): void {
  void program;
}
