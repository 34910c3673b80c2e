import type { Command } from 'commander';

export function registerUsers(program: Command): void {
  void program;
}
