// Fixtures of the logs and schedule report examples (issue 30): a node that enrolls through the
// demo's agent door with osquery's protocol (its flags, secret and agent certificate, as an agent
// is given them) and sends result lines for users_query and the network pack's listening, so the
// examples print rows, and a follower gets a line sent while it follows.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parseFlags } from '../../helpers/osquery-agent.js';
import { added, logAgent, type LoggingNode } from '../../helpers/osquery-logs.js';
import { packed, scheduled } from './helpers.js';
import type { Fixture } from './types.js';
import type { Sandbox, World } from './world.js';

type Reporter = { agent: ReturnType<typeof logAgent>; node: LoggingNode };
const reporters = new WeakMap<World, Promise<Reporter>>();

/** One node per world, web-fra-0001 (the name the examples give), enrolled on first use. */
function reporter(world: World): Promise<Reporter> {
  let r = reporters.get(world);
  if (!r) {
    r = (async () => {
      const data = async (part: string) =>
        ((await world.api('GET', `/api/v1/environments/prod/enroll/${part}`)).body as { data: string }).data;
      const flags = parseFlags(await data('flags'));
      const secret = await data('secret');
      const certFile = /Agent API \(osquery TLS\) listening on \S+; certificate (\S+)/.exec(world.banner())?.[1];
      if (!certFile) throw new Error("the demo's banner names no agent certificate");
      const agent = logAgent(flags, secret, readFileSync(certFile, 'utf8'));
      return { agent, node: await agent.enroll('web-fra-0001') };
    })();
    reporters.set(world, r);
  }
  return r;
}

/** users_query and the network pack's listening scheduled in prod, and a run of each reported. */
async function reported(sb: Sandbox): Promise<void> {
  await scheduled(sb.world, 'prod', { users_query: true });
  await packed(sb.world, 'prod', 'network', { listening: true });
  const { agent, node } = await reporter(sb.world);
  await agent.send(node, 'result', [
    added('users_query', { uid: '0', username: 'root' }, 0),
    added('users_query', { uid: '1000', username: 'alice' }, 0),
    added('pack_network_listening', { pid: '812', port: '22', address: '0.0.0.0' }, 0),
  ]);
}

const printsRoot: Fixture['check'] = (r) => void expect(r.stdout).toMatch(/root/);

export const LOGS_FIXTURES: Record<string, Fixture> = {
  'fleetctl logs --query users_query --since 1h': { setup: reported, check: printsRoot },
  'fleetctl logs --type result --since 10m | jq -r .entry.columns.username': {
    setup: reported,
    check: (r) => void expect(r.stdout.split('\n')).toContain('root'),
  },
  // Runs until Ctrl-C: a line the node sends while it follows is printed.
  'fleetctl logs --follow --query users_query': {
    setup: reported,
    during: async (sb) => {
      const { agent, node } = await reporter(sb.world);
      await agent.send(node, 'result', [added('users_query', { uid: '1001', username: 'sent-while-following' }, 1)]);
    },
    stop: /sent-while-following/,
  },
  'fleetctl schedule report prod users_query': { setup: reported, check: printsRoot },
  'fleetctl schedule report prod users_query --node web-fra-0001': { setup: reported, check: printsRoot },
  'fleetctl schedule report prod users_query --all --fields node,username -o csv > users.csv': {
    setup: reported,
    check: (_r, sb) => void expect(readFileSync(join(sb.cwd, 'users.csv'), 'utf8')).toMatch(/^web-fra-0001,root$/m),
  },
  'fleetctl schedule report prod listening --pack network --all -o json': {
    setup: reported,
    check: (r) => void expect(r.stdout).toMatch(/"port":\s*"22"/),
  },
};
