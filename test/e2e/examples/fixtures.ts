// What each example needs to run: the one table, keyed by the example's exact text, split by
// command group. An example with no entry runs as it is, in the demo world, logged in as admin
// on prod, in an empty working directory. docs/cli.md "Every example runs" says how to add one.
import type { Fixture } from './types.js';
import { AUTH_FIXTURES } from './fixtures-auth.js';
import { FLEET_FIXTURES } from './fixtures-fleet.js';
import { CONFIG_FIXTURES } from './fixtures-config.js';
import { SERVER_FIXTURES } from './fixtures-server.js';

export type { Fixture } from './types.js';

/** README quotes that are not commands to run, each with why. */
export const NOT_EXAMPLES: Record<string, string> = {};

export const FIXTURES: Record<string, Fixture> = {
  ...AUTH_FIXTURES,
  ...FLEET_FIXTURES,
  ...CONFIG_FIXTURES,
  ...SERVER_FIXTURES,
};
