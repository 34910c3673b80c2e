// What each example needs to run: the one table, keyed by the example's exact text, split by
// command group. An example with no entry runs as it is, in the demo world, logged in as admin
// on prod, in an empty working directory. docs/cli.md "Every example runs" says how to add one.
import type { Fixture } from './types.js';
import { AUTH_FIXTURES } from './fixtures-auth.js';
import { FLEET_FIXTURES } from './fixtures-fleet.js';
import { CONFIG_FIXTURES } from './fixtures-config.js';
import { SERVER_FIXTURES } from './fixtures-server.js';
import { README_FIXTURES } from './fixtures-readme.js';
import { ENV_FIXTURES } from './fixtures-env.js';
import { LOGS_FIXTURES } from './fixtures-logs.js';

export type { Fixture } from './types.js';

/** README quotes that are not commands to run, each with why. */
export const NOT_EXAMPLES: Record<string, string> = {
  'fleetctl enroll show ENV flags':
    "says what the real-agent harness (test/helpers/osqueryd.ts) runs for its test's environment, not a command for the reader; README.md:106 runs it on prod",
};

/** The tables merged; an example with an entry in two of them is a mistake, refused at load. */
function merged(...tables: Record<string, Fixture>[]): Record<string, Fixture> {
  const all: Record<string, Fixture> = {};
  for (const t of tables) {
    for (const [k, v] of Object.entries(t)) {
      if (k in all) throw new Error(`two fixtures for the example: ${k}`);
      all[k] = v;
    }
  }
  return all;
}

export const FIXTURES = merged(
  AUTH_FIXTURES,
  FLEET_FIXTURES,
  CONFIG_FIXTURES,
  ENV_FIXTURES,
  SERVER_FIXTURES,
  README_FIXTURES,
  LOGS_FIXTURES,
);
