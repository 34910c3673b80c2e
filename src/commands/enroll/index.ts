import type { Command } from 'commander';

export function registerEnroll(program: Command): void {
  void program;
}
