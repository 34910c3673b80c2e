// Fixtures of the env create/edit/delete examples (issue 27's verbs): each makes the state its
// example is for (a name free to create, an environment to edit or delete), whatever ran before,
// and checks that the server did what the example says. prod's agent host is put back afterwards,
// so the examples after these see the demo's prod.
import { expect } from 'vitest';
import { ensureEnv, ensureNoEnv, envExists } from './helpers.js';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';

type Env = {
  name: string;
  hostname: string;
  hostname_pinned: boolean;
  accept_enrolls: boolean;
  query_interval: number;
  detail_refresh: number;
  enroll_expire: string;
};

const env = async (sb: Sandbox, name: string): Promise<Env> => (await sb.world.api('GET', `/api/v1/environments/${name}`)).body as Env;

/** An example that creates `name`: the name is free first, the environment exists after. */
const creates = (name: string, check?: (e: Env) => void): Fixture => ({
  setup: (sb) => ensureNoEnv(sb.world, name),
  check: async (_r, sb) => {
    expect(await envExists(sb.world, name)).toBe(true);
    check?.(await env(sb, name));
  },
});

/** prod following the server's --agent-url again, as the demo starts. */
const prodFollowsServer = async (sb: Sandbox) => void (await sb.world.api('PATCH', '/api/v1/environments/prod', { hostname: '' }));

export const ENV_FIXTURES: Record<string, Fixture> = {
  'fleetctl env create rollout --enroll-window 14d': creates('rollout', (e) =>
    expect(Date.parse(e.enroll_expire) - Date.now()).toBeGreaterThan(13 * 86_400_000),
  ),
  'fleetctl env create qa': creates('qa'),
  'fleetctl env create eu-prod --agent-host fleet-eu.example.com:8443 --enroll-window 14d': creates('eu-prod', (e) =>
    expect(e).toMatchObject({ hostname: 'fleet-eu.example.com:8443', hostname_pinned: true }),
  ),
  'fleetctl env create lab --query 10 --detail-refresh 10m -o json': {
    ...creates('lab', (e) => expect(e).toMatchObject({ query_interval: 10, detail_refresh: 600 })),
    check: async (r, sb) => {
      expect(JSON.parse(r.stdout)).toMatchObject({ name: 'lab', query_interval: 10, detail_refresh: 600 });
      expect(await envExists(sb.world, 'lab')).toBe(true);
    },
  },
  'fleetctl env edit prod --agent-host fleet.example.com:443': {
    setup: prodFollowsServer,
    // Read from what it printed: prod is put back (after) before the check.
    check: (r) => expect(r.stdout).toMatch(/^(agent host|hostname)\t+fleet\.example\.com:443$/m),
    after: prodFollowsServer,
  },
  'fleetctl env edit prod --follow-server': {
    setup: async (sb) => void (await sb.world.api('PATCH', '/api/v1/environments/prod', { hostname: 'pinned.example.com:8443' })),
    // No longer the pinned name: the server's own agent address again.
    check: (r) => {
      expect(r.stdout).toMatch(/^(agent host|hostname)\t+\S+$/m);
      expect(r.stdout).not.toContain('pinned.example.com');
    },
    after: prodFollowsServer,
  },
  'fleetctl env edit lab --no-enroll': {
    setup: (sb) => ensureEnv(sb.world, 'lab'),
    check: async (_r, sb) => expect((await env(sb, 'lab')).accept_enrolls).toBe(false),
  },
  'fleetctl env edit qa --name qa-eu': {
    setup: async (sb) => {
      await ensureNoEnv(sb.world, 'qa-eu');
      await ensureEnv(sb.world, 'qa');
    },
    check: async (_r, sb) => {
      expect(await envExists(sb.world, 'qa-eu')).toBe(true);
      expect(await envExists(sb.world, 'qa')).toBe(false);
    },
  },
  'fleetctl env delete lab': {
    setup: (sb) => ensureEnv(sb.world, 'lab'),
    terminal: [[/Delete environment lab/, 'y']],
    check: async (_r, sb) => expect(await envExists(sb.world, 'lab')).toBe(false),
  },
  'fleetctl env delete lab --yes': {
    setup: (sb) => ensureEnv(sb.world, 'lab'),
    check: async (_r, sb) => expect(await envExists(sb.world, 'lab')).toBe(false),
  },
};
