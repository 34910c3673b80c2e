// Fixtures of the README's own examples (those that are not also --help examples). The README's
// demo runs with --dev-password demo-pass-1, the password its quick start types.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';
import { NEW_PASSWORD, ensureNoUser, ensureUser } from './helpers.js';
import { CONFIG_DIR, DIFFERENT_CONFIG_DIR } from './fixtures-config.js';
import { dbInternal } from './fixtures-server.js';
import { ROOT } from './sources.js';

const pw = (sb: Sandbox) => sb.world.password;

/** man(1) finds fleetctl's pages, as after `npm install -g` (MANPATH instead of /usr/share/man). */
const installedManPages = async (sb: Sandbox) => {
  const man1 = join(sb.root, 'man', 'man1');
  mkdirSync(man1, { recursive: true });
  symlinkSync(join(ROOT, 'man', 'fleetctl.1'), join(man1, 'fleetctl.1'));
  sb.env.MANPATH = join(sb.root, 'man');
  sb.env.MANPAGER = 'cat';
};

export const README_FIXTURES: Record<string, Fixture> = {
  'fleetctl login --url https://fleet.example.com --env prod --username alice': {
    login: 'none',
    setup: (sb) => ensureUser(sb.world, 'alice'),
    terminal: [[/password:/i, pw]],
  },
  'fleetctl --version && man fleetctl': {
    setup: installedManPages,
    check: (r) => expect(r.stdout).toMatch(/^FLEETCTL\(1\)/m),
  },
  // The quick start's server: the README runs it on the default port, 8080 (a loopback of its own here).
  'fleetctl server --dev --dev-agents 5': { namespaces: ['net'], stop: /Simulated agents: 5 of 5 enrolled/ },
  'fleetctl server --dev --dev-agents 5 --dev-password demo-pass-1': { namespaces: ['net'], stop: /Simulated agents: 5 of 5 enrolled/ },
  'fleetctl users add alice --environment prod --level query --password-stdin': {
    setup: (sb) => ensureNoUser(sb.world, 'alice'),
    stdin: NEW_PASSWORD,
  },
  'fleetctl query run "SELECT * FROM os_version" --target status:active --exit': { world: 'live' },
  'fleetctl query run "SELECT * FROM osquery_info"': { world: 'live' },
  // alice does something while her audit trail is followed (a login attempt, whatever her password).
  'fleetctl audit list --user alice --follow': {
    setup: (sb) => ensureUser(sb.world, 'alice'),
    during: async (sb) => void (await sb.world.api('POST', '/api/v1/login/prod', { username: 'alice', password: 'a-wrong-password' }, [401])),
    stop: /\balice\b.*login/,
  },
  'fleetctl stats --watch 5s': { terminal: [], stop: /prod/ },
  // diff exits 1 when the server differs from the files (for CI); these files differ.
  'fleetctl diff -f config/': {
    files: DIFFERENT_CONFIG_DIR,
    exit: { code: [1], why: 'diff exits 1 when something differs' },
    check: (r) => expect(r.stdout).toMatch(/^\+ +interval: 1800$/m),
  },
  'fleetctl diff -f config/ --prune': {
    files: DIFFERENT_CONFIG_DIR,
    exit: { code: [1], why: 'diff exits 1 when something differs' },
    check: (r) => expect(r.stdout).toMatch(/^\+ +interval: 1800$/m),
  },
  'fleetctl diff -f prod.yaml; echo $?': { files: { 'prod.yaml': DIFFERENT_CONFIG_DIR['config/prod.yaml']! }, check: (r) => expect(r.stdout).toMatch(/^1$/m) },
  'fleetctl apply -f config/ --prune --dry-run': { files: CONFIG_DIR },
  'fleetctl apply -f config/ --prune': { files: CONFIG_DIR },
  'fleetctl server --db /var/lib/fleetctl/fleet.db --admin-password-stdin --create-env prod': {
    namespaces: ['mount', 'net'],
    stdin: 'first-admin-pass-1',
    stop: /listening on http:\/\/127\.0\.0\.1:8080/,
  },
  // GitOps: the service account, then its login in the workflow.
  'printf %s "$PW" | fleetctl users add gitops --service --environment prod,staging --level admin --password-stdin': {
    setup: async (sb) => {
      await ensureNoUser(sb.world, 'gitops');
      sb.env.PW = NEW_PASSWORD;
    },
  },
  'printf %s "$PW" | fleetctl login --url https://fleet.example.com --env prod --username gitops --password-stdin': {
    login: 'none',
    setup: async (sb) => {
      // Made again with a password known here (the example before may have made it with another).
      await ensureNoUser(sb.world, 'gitops');
      await ensureUser(sb.world, 'gitops', { envs: ['prod'] });
      sb.env.PW = pw(sb);
    },
  },
  // The README's replica, after its `export FLEETCTL_DB=...` line, with the agent listener's certificate.
  'printf %s "$ADMIN_PW" | fleetctl server --db-ca /etc/ssl/db-ca.pem --listen 0.0.0.0:8080 --create-env prod --admin-password-stdin --agent-listen 0.0.0.0:8443 --agent-tls-cert agents.pem --agent-tls-key agents.key': {
    ...dbInternal(() => ['/etc/ssl/db-ca.pem']),
    setup: async (sb) => {
      sb.env.FLEETCTL_DB = 'postgres://fleet:PASSWORD@db.internal:5432/fleet?sslmode=verify-full';
      sb.env.ADMIN_PW = 'first-admin-pass-1';
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(sb.cwd, 'agents.key'), '-out', join(sb.cwd, 'agents.pem'), '-days', '2', '-subj', '/CN=fleet.example.com'], { stdio: 'ignore' });
    },
    stop: /Agent API \(osquery TLS\) listening on /,
  },
};
