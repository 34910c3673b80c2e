// `fleetctl version` (gh and kubectl have the verb; `--version` stays the launcher's fast path).
import type { Command } from 'commander';
import { verb } from '../define.js';
import { printObject } from '../../output/index.js';
import pkg from '../../../package.json' with { type: 'json' };

export function registerVersion(program: Command): void {
  verb(
    program,
    {
      name: 'version',
      summary: 'Print the version of fleetctl',
      description: 'Print the version of fleetctl, with the Node.js version and platform it runs on. -o json prints {version, node, platform}.',
      examples: ['fleetctl version', 'fleetctl version -o json'],
    },
    () => {},
    async (ctx) => {
      const info = { version: pkg.version, node: process.version, platform: `${process.platform}-${process.arch}` };
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), info);
      else ctx.io.out(`fleetctl ${info.version} (node ${info.node}, ${info.platform})\n`);
    },
  );
}
