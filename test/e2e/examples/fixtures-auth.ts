// Fixtures of the login, auth, mfa and users examples.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';
import { NEW_PASSWORD, demoMfa, ensureNoUser, ensureUser, ownUser, totpNow } from './helpers.js';

const pw = (sb: Sandbox) => sb.world.password;

/** A password prompt answered, then typed again where the command asks twice. */
const newPassword = (prompt: RegExp): Fixture['terminal'] => [
  [prompt, NEW_PASSWORD],
  [/Repeat the new password:/, NEW_PASSWORD],
];

/** The example's own user (MFA and password changes touch no one else); PW is its password. */
const asOwnUser = (totp?: 'on' | 'begun') => async (sb: Sandbox) => {
  const u = await ownUser(sb, { totp });
  sb.env.PW = u.password;
  if (u.secret) sb.env.secret = u.secret;
};

const staging = async (sb: Sandbox) => sb.login('analyst', { env: 'staging', profile: 'staging' });

export const AUTH_FIXTURES: Record<string, Fixture> = {
  // A first login: nothing configured yet, every value asked for.
  'fleetctl login': {
    login: 'none',
    terminal: [
      [/Server URL:/, (sb) => sb.world.url],
      [/Environment:/, 'prod'],
      [/Username:/, 'admin'],
      [/password:/i, pw],
    ],
  },
  'fleetctl login --url http://127.0.0.1:8080 --env prod --username admin': { login: 'none', terminal: [[/password:/i, pw]] },
  'printf %s "$FLEET_PASSWORD" | fleetctl login --url https://fleet.example.com --env staging --username ci-bot --password-stdin': {
    login: 'none',
    setup: (sb) => void (sb.env.FLEET_PASSWORD = pw(sb)),
  },
  'printf %s "$FLEET_PASSWORD" | fleetctl login --username mfa-user --password-stdin --totp-code "$(oathtool --totp -b "$SECRET")"': {
    setup: (sb) => {
      sb.env.FLEET_PASSWORD = pw(sb);
      sb.env.SECRET = demoMfa(sb.world).secret;
    },
  },
  'printf \'%s\\n%s\\n\' "$FLEET_PASSWORD" "$RECOVERY_CODE" | fleetctl login --username mfa-user --password-stdin --mfa-code-stdin': {
    setup: (sb) => {
      sb.env.FLEET_PASSWORD = pw(sb);
      sb.env.RECOVERY_CODE = demoMfa(sb.world).recoveryCodes[0]!;
    },
  },
  'fleetctl login --profile staging --url https://staging.example.com --env staging': {
    terminal: [
      [/Username:/, 'analyst'],
      [/password:/i, pw],
    ],
  },
  'fleetctl logout --profile staging': { setup: staging },
  'fleetctl auth login --url https://fleet.example.com --env prod': {
    login: 'none',
    terminal: [
      [/Username:/, 'admin'],
      [/password:/i, pw],
    ],
  },
  'fleetctl auth status --profile staging -o json': { setup: staging },
  'curl -H "Authorization: Bearer $(fleetctl auth token)" "$URL/api/v1/stats"': {
    setup: (sb) => void (sb.env.URL = sb.world.url),
    check: (r) => expect(JSON.parse(r.stdout)).toHaveProperty('total_nodes'),
  },

  // mfa: each as a user of its own.
  'fleetctl mfa totp setup': {
    setup: asOwnUser(),
    terminal: [[/6-digit code from the app:/, (_sb, screen) => totpNow(/\b([A-Z2-7]{32})\b/.exec(screen)![1])]],
  },
  'secret=$(fleetctl mfa totp setup --jq .secret) && fleetctl mfa totp confirm --code "$(oathtool --totp -b "$secret")"': {
    setup: asOwnUser(),
  },
  'fleetctl mfa totp confirm': { setup: asOwnUser('begun'), terminal: [[/6-digit code from the app:/, (sb) => totpNow(sb.env.secret)]] },
  'oathtool --totp -b "$secret" | fleetctl mfa totp confirm --code-stdin': { setup: asOwnUser('begun') },
  'fleetctl mfa totp disable': { setup: asOwnUser('on'), terminal: [[/password:/i, pw]] },
  'printf %s "$PW" | fleetctl mfa totp disable --password-stdin': { setup: asOwnUser('on') },
  'fleetctl mfa recovery-codes regenerate': {
    setup: asOwnUser('on'),
    terminal: [
      [/Replace your recovery codes\?/, 'y'],
      [/password:/i, pw],
    ],
  },
  'printf %s "$PW" | fleetctl mfa recovery-codes regenerate --yes --password-stdin > codes.txt': {
    setup: asOwnUser('on'),
    check: (_r, sb) => expect(readFileSync(join(sb.cwd, 'codes.txt'), 'utf8').trim().split('\n')).toHaveLength(10),
  },
  // The demo's admin has two WebAuthn credentials, cred-1a2b and cred-3c4d (seed-auth.ts), and a
  // super-admin must keep one second factor: each removal runs where the admin still has both
  // (`show cred-1a2b` runs before `remove cred-1a2b`, in the order of --help).
  'fleetctl mfa webauthn remove cred-1a2b': {
    terminal: [
      [/Remove WebAuthn credential cred-1a2b/, 'y'],
      [/password:/i, pw],
    ],
  },
  'printf %s "$PW" | fleetctl mfa webauthn remove cred-3c4d --yes --password-stdin': {
    world: 'live',
    setup: (sb) => void (sb.env.PW = pw(sb)),
  },

  // users (as the demo's super-admin)
  'fleetctl users show alice -o json': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users show alice': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users show alice --jq .environments': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users add alice --email alice@example.com --environment prod --level query': {
    setup: (sb) => ensureNoUser(sb.world, 'alice'),
    terminal: newPassword(/New password for alice:/),
  },
  'fleetctl users add alice --fullname "Alice Doe" --email alice@example.com --environment prod': {
    setup: (sb) => ensureNoUser(sb.world, 'alice'),
    terminal: newPassword(/New password for alice:/),
  },
  'fleetctl users add bob --environment prod,staging --level query --level carve': {
    setup: (sb) => ensureNoUser(sb.world, 'bob'),
    terminal: newPassword(/New password for bob:/),
  },
  'printf %s "$PW" | fleetctl users add ci-deploy --service --environment prod --level admin --password-stdin': {
    setup: async (sb) => {
      await ensureNoUser(sb.world, 'ci-deploy');
      sb.env.PW = NEW_PASSWORD;
    },
  },
  'fleetctl users add root2 --admin': { setup: (sb) => ensureNoUser(sb.world, 'root2'), terminal: newPassword(/New password for root2:/) },
  'fleetctl users edit alice --environment staging --level admin': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users edit alice --email alice@new.example.com': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users edit alice --environment prod --level admin': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users edit alice --no-admin': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users edit alice --environment staging --level none': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users edit alice --set-password': {
    setup: (sb) => ensureUser(sb.world, 'alice'),
    terminal: newPassword(/New password for alice:/),
  },
  'printf %s "$PW" | fleetctl users edit ci-deploy --password-stdin': {
    setup: async (sb) => {
      await ensureUser(sb.world, 'ci-deploy');
      sb.env.PW = NEW_PASSWORD;
    },
  },
  'fleetctl users remove alice': { setup: (sb) => ensureUser(sb.world, 'alice'), terminal: [[/Remove user alice/, 'y']] },
  'fleetctl users remove alice --yes': { setup: (sb) => ensureUser(sb.world, 'alice') },
  'fleetctl users passwd': { setup: asOwnUser(), terminal: [[/Current password:/, pw], ...newPassword(/New password:/)!] },
  'printf \'%s\\n%s\\n\' "$OLD" "$NEW" | fleetctl users passwd --password-stdin': {
    setup: async (sb) => {
      const u = await ownUser(sb);
      sb.env.OLD = u.password;
      sb.env.NEW = NEW_PASSWORD;
    },
  },
};
