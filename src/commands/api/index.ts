import type { Command } from 'commander';

export function registerApi(program: Command): void {
  void program;
}
