// `fleetctl version` (gh and kubectl have the verb; `--version` stays the launcher's fast path).
// Issue 27: the server's version beside the client's, as `kubectl version` shows both.
import type { Command } from 'commander';
import { verb } from '../define.js';
import { printObject } from '../../output/index.js';
import { safeText } from '../../output/sanitize.js';
import pkg from '../../../package.json' with { type: 'json' };

interface ServerInfo {
  url: string;
  flavor: string;
  version: string;
  schema: string;
  database: string;
  node: string;
}

export function registerVersion(program: Command): void {
  verb<{ client?: boolean }>(
    program,
    {
      name: 'version',
      summary: 'Print the version of fleetctl and of the server it talks to',
      description:
        'Print the version of fleetctl, with the Node.js version and platform it runs on, and, when a server is configured ' +
        '(a profile, --url or FLEETCTL_URL), the version of that server: its release, database schema and database ' +
        '(GET /api/v1/version; osctrl reports none). A server that cannot be asked is an error after the client line, ' +
        'as in kubectl; --client prints only the client. -o json prints {version, node, platform, server} (server null without one).',
      examples: ['fleetctl version', 'fleetctl version --client', 'fleetctl version -o json --jq .server.version'],
    },
    (cmd) => cmd.option('--client', 'only the client: ask no server'),
    async (ctx, _args, o) => {
      const client = { version: pkg.version, node: process.version, platform: `${process.platform}-${process.arch}` };
      const clientLine = `fleetctl ${client.version} (node ${client.node}, ${client.platform})\n`;
      const url = o.client ? undefined : ctx.url();
      if (!url) {
        if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { ...client, server: null });
        else ctx.io.out(clientLine);
        return;
      }
      if (!ctx.wantsData()) ctx.io.out(clientLine);
      const api = await ctx.api();
      let server: ServerInfo;
      if (api.flavor === 'osctrl') {
        server = { url, flavor: 'osctrl', version: '', schema: '', database: '', node: '' };
      } else {
        const v = await api.server.version();
        server = { url, flavor: 'fleet', ...v };
      }
      if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { ...client, server });
      ctx.io.out(
        server.flavor === 'osctrl'
          ? `server: osctrl at ${safeText(url)} (osctrl reports no version)\n`
          : `server: fleetctl ${safeText(server.version)} at ${safeText(url)} (schema ${safeText(server.schema)}, ${safeText(server.database)}, node ${safeText(server.node)})\n`,
      );
    },
  );
}
