// Shell completion of names only fleetctl knows: profile and environment names from the config
// (no server call), hostnames and tag names from the server through the hidden
// `fleetctl __complete KIND [PREFIX]`, in a real bash and fish with fleetctl on PATH.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { BIN, Cli, type ServerProcess } from '../helpers/cli.js';
import { startAdminSession } from '../helpers/admin-cli.js';
import { BASH_FILE, FISH_FILE, bashComplete } from '../gen/shells.js';

let server: ServerProcess;
let cli: Cli;
let bin: string;

beforeAll(async () => {
  ({ server, cli } = await startAdminSession());
  bin = mkdtempSync(join(tmpdir(), 'fleetctl-path-'));
  writeFileSync(join(bin, 'fleetctl'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'fleetctl'), 0o755);
});

afterAll(async () => {
  cli?.cleanup();
  rmSync(bin, { recursive: true, force: true });
  await server?.stop();
});

const lines = async (args: string[], c = cli) => {
  const r = await c.run(['__complete', ...args]);
  expect(r.exitCode).toBe(0);
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').filter(Boolean);
};

describe('fleetctl __complete', () => {
  it('profiles and environments come from the config; hostnames and tags from the server', async () => {
    expect(await lines(['profile'])).toEqual(['default']);
    expect((await lines(['env'])).sort()).toEqual(['dev', 'prod', 'staging']);
    const hosts = await lines(['node', 'prod-web-00']);
    expect(hosts.length).toBeGreaterThan(0);
    for (const h of hosts) expect(h.startsWith('prod-web-00')).toBe(true);
    expect(await lines(['tag'])).toEqual(expect.arrayContaining(['pci', 'servers']));
  });

  it('prints nothing (exit 0, no error text) when it cannot answer', async () => {
    const fresh = new Cli();
    expect(await lines(['node'], fresh)).toEqual([]);
    expect(await lines(['env'], fresh)).toEqual([]);
    fresh.cleanup();
  });
});

describe('in the shells', () => {
  const env = () => `export PATH=${bin}:$PATH FLEETCTL_CONFIG_DIR=${cli.configDir} DBUS_SESSION_BUS_ADDRESS=disabled: FLEETCTL_PAGER=cat;`;

  it('bash completes --profile, --env, node hostnames and tag names', async () => {
    const [profiles, envs, hosts, tags] = await bashComplete(
      ['fleetctl --profile ', 'fleetctl --env ', 'fleetctl nodes show prod-web-00', 'fleetctl tags apply p'],
      { preamble: `${env()} source ${BASH_FILE}` },
    );
    expect(profiles).toEqual(['default']);
    expect(envs.sort()).toEqual(['dev', 'prod', 'staging']);
    expect(hosts.length).toBeGreaterThan(0);
    for (const h of hosts) expect(h).toMatch(/^prod-web-00/);
    expect(tags).toContain('pci');
  });

  it('fish completes environment names and tags', async () => {
    const script = [
      `set -x PATH ${bin} $PATH; set -x FLEETCTL_CONFIG_DIR ${cli.configDir}; set -x DBUS_SESSION_BUS_ADDRESS disabled:`,
      `source ${FISH_FILE}; complete -C 'fleetctl --env '; echo ---; complete -C 'fleetctl tags apply p'`,
    ].join('; ');
    const r = await execa('fish', ['--no-config', '-c', script], { reject: false });
    expect(r.stderr).toBe('');
    const [envs, tags] = r.stdout.split('---\n').map((b) =>
      b
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]),
    );
    expect(envs.sort()).toEqual(['dev', 'prod', 'staging']);
    expect(tags).toContain('pci');
  });
});
