// Fixtures of the config, completion, apply, diff and api examples.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';

/** An apply document as `fleetctl env config ENV -o yaml` prints it. */
const doc = (env: string, interval: number) => `apiVersion: fleetctl/v1
kind: OsqueryConfig
metadata:
  environment: ${env}
spec:
  schedule:
    users_query:
      query: SELECT uid, username FROM users
      interval: ${interval}
  packs:
    web:
      platform: linux
      queries:
        listening:
          query: SELECT pid, port FROM listening_ports
          interval: 600
`;

/** A repository of documents, one a file, one in a subdirectory (for -R). */
export const CONFIG_DIR: Record<string, string> = {
  'config/prod.yaml': doc('prod', 300),
  'config/staging/staging.yaml': doc('staging', 300),
};
/** The same repository asking for an interval no example applies: a diff always finds it. */
export const DIFFERENT_CONFIG_DIR: Record<string, string> = {
  'config/prod.yaml': doc('prod', 1800),
  'config/staging/staging.yaml': doc('staging', 1800),
};

const staging = async (sb: Sandbox) => sb.login('analyst', { env: 'staging', profile: 'staging' });

/** The directories a user's shell setup has for completion files (the examples write into them). */
const completionDirs = (path: string): Fixture => ({
  files: { [`~/${path}/.keep`]: '' },
  check: (r) => expect(r.stderr).toBe(''),
});

export const CONFIG_FIXTURES: Record<string, Fixture> = {
  'fleetctl config use staging': { setup: staging },
  'fleetctl config show staging --json': { setup: staging },
  'fleetctl config remove staging': { setup: staging },

  'fleetctl completion bash > ~/.local/share/bash-completion/completions/fleetctl': completionDirs(
    '.local/share/bash-completion/completions',
  ),
  'fleetctl completion zsh > ~/.zfunc/_fleetctl': completionDirs('.zfunc'),
  'fleetctl completion fish > ~/.config/fish/completions/fleetctl.fish': completionDirs('.config/fish/completions'),

  'fleetctl apply -f prod.yaml': { files: { 'prod.yaml': doc('prod', 300) } },
  'fleetctl apply -f config/ --dry-run': { files: CONFIG_DIR },
  'fleetctl apply -f config/ -R --prune': { files: CONFIG_DIR },
  // diff exits 1 when something differs (documented, for CI); the file asks for another interval.
  'fleetctl diff -f prod.yaml': {
    files: { 'prod.yaml': DIFFERENT_CONFIG_DIR['config/prod.yaml'] },
    exit: { code: [1], why: 'diff exits 1 when the server differs from the file (the point of the example)' },
    check: (r) => expect(r.stdout).toMatch(/^\+ +interval: 1800$/m),
  },
  'fleetctl diff -f config/ --prune || echo "drift"': { files: CONFIG_DIR },
  'fleetctl nodes list --all --json > nodes.json': { check: (_r, sb) => expect(existsSync(join(sb.cwd, 'nodes.json'))).toBe(true) },
};
