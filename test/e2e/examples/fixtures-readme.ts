// Fixtures of the README's own examples (those that are not also --help examples). The README's
// demo runs with --dev-password demo-pass-1, the password its quick start types.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';
import { NEW_PASSWORD, ensureEnv, ensureNoEnv, ensureNoUser, ensureUser } from './helpers.js';
import { CONFIG_DIR, DIFFERENT_CONFIG_DIR } from './fixtures-config.js';
import { database, dbInternal, varLibDb } from './fixtures-server.js';
import { ROOT } from './sources.js';

const pw = (sb: Sandbox) => sb.world.password;

/** man(1) finds fleetctl's pages, as after `npm install -g` (MANPATH instead of /usr/share/man). */
const installedManPages = (sb: Sandbox) => {
  const man1 = join(sb.root, 'man', 'man1');
  mkdirSync(man1, { recursive: true });
  symlinkSync(join(ROOT, 'man', 'fleetctl.1'), join(man1, 'fleetctl.1'));
  sb.env.MANPATH = join(sb.root, 'man');
  sb.env.MANPAGER = 'cat';
};

/**
 * The private CA of "Running it in production", step 1: the README's own block (deploy:pki) run
 * in `dir`, which then holds pki/root.pem, pki/agent.key and pki/agent-chain.pem for
 * fleet.example.com.
 */
function readmePki(dir: string): string {
  const m = /<!-- deploy:pki -->\n```sh\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  if (!m) throw new Error('README.md has no <!-- deploy:pki --> block');
  execFileSync('bash', ['-e', '-c', m[1]], { cwd: dir, stdio: 'ignore' });
  return join(dir, 'pki');
}

/** An example that creates environment `name` (the README creates some twice). */
const createsEnv = (name: string): Fixture => ({ setup: (sb) => ensureNoEnv(sb.world, name) });
/** prod as the demo has it, after an example that closed its enrollment or changed its detail refresh. */
const prodAsDemo = async (sb: Sandbox) => {
  await sb.world.api('PATCH', '/api/v1/environments/prod', { accept_enrolls: true, detail_refresh: 0 });
  await sb.world.api('POST', '/api/v1/environments/prod/enroll/notexpire', {});
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
  // alice does something while her audit trail is followed (a login attempt, whatever her password).
  'fleetctl audit list --user alice --follow': {
    setup: (sb) => ensureUser(sb.world, 'alice'),
    during: async (sb) =>
      void (await sb.world.api('POST', '/api/v1/login/prod', { username: 'alice', password: 'a-wrong-password' }, [401])),
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
  'fleetctl diff -f prod.yaml; echo $?': {
    files: { 'prod.yaml': DIFFERENT_CONFIG_DIR['config/prod.yaml'] },
    check: (r) => expect(r.stdout).toMatch(/^1$/m),
  },
  'fleetctl apply -f config/ --prune --dry-run': { files: CONFIG_DIR },
  'fleetctl apply -f config/ --prune': { files: CONFIG_DIR },
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
  // The README's replica, after its `export FLEETCTL_DB=...` line, with the agent door's
  // certificate from the README's private CA (step 1 of "Running it in production").
  'printf %s "$ADMIN_PW" | fleetctl server --db-ca /etc/ssl/db-ca.pem --listen 0.0.0.0:8080 --create-env prod --admin-password-stdin --agent-listen 0.0.0.0:8443 --agent-url https://fleet.example.com:8443 --agent-tls-cert agent-chain.pem --agent-tls-key agent.key --agent-ca root.pem':
    {
      ...dbInternal(() => ['/etc/ssl/db-ca.pem']),
      setup: (sb) => {
        sb.env.FLEETCTL_DB = 'postgres://fleet:PASSWORD@db.internal:5432/fleet?sslmode=verify-full';
        sb.env.ADMIN_PW = 'first-admin-pass-1';
        const pki = readmePki(sb.root);
        for (const f of ['agent-chain.pem', 'agent.key', 'root.pem']) copyFileSync(join(pki, f), join(sb.cwd, f));
      },
      stop: /Agent API \(osquery TLS\) listening on /,
    },
  // The systemd unit's ExecStart as the README prints it: the certificate files where step 2
  // installs them (/etc/fleetctl, an overlay here), the first start's password from the unit's
  // environment file (here the shell's environment).
  'fleetctl server --db /var/lib/fleetctl/fleet.db --listen 127.0.0.1:8080 --agent-listen 0.0.0.0:8443 --agent-url https://fleet.example.com:8443 --agent-tls-cert /etc/fleetctl/agent-chain.pem --agent-tls-key /etc/fleetctl/agent.key --agent-ca /etc/fleetctl/agent-ca.pem --create-env prod --log':
    {
      namespaces: ['mount', 'net'],
      setup: (sb) => {
        sb.env.FLEETCTL_ADMIN_PASSWORD = 'first-admin-pass-1';
        const pki = readmePki(sb.root);
        const etc = join(sb.root, 'root', 'etc', 'fleetctl');
        mkdirSync(etc, { recursive: true });
        for (const [from, to] of [
          ['agent-chain.pem', 'agent-chain.pem'],
          ['agent.key', 'agent.key'],
          ['root.pem', 'agent-ca.pem'],
        ])
          copyFileSync(join(pki, from), join(etc, to));
      },
      stop: /"event":"start"/,
    },
  'fleetctl server backup --db /var/lib/fleetctl/fleet.db fleet-backup.db': {
    namespaces: ['mount'],
    setup: (sb) => database(varLibDb(sb), 'latest'),
    check: (r, sb) =>
      expect(r.stdout).toMatch(new RegExp(`^Backed up /var/lib/fleetctl/fleet\\.db .* to ${join(sb.cwd, 'fleet-backup.db')}: `)),
  },
  'fleetctl env create eu-prod --agent-host fleet-eu.example.com:8443': createsEnv('eu-prod'),
  'fleetctl env create eu-prod': createsEnv('eu-prod'),
  'fleetctl env create lab --enroll-window 7d': createsEnv('lab'),
  'fleetctl env edit eu-prod --agent-host fleet-eu.example.com:8443': { setup: (sb) => ensureEnv(sb.world, 'eu-prod') },
  'fleetctl env edit prod --no-enroll': { after: prodAsDemo },
  'fleetctl env edit prod --detail-refresh 30m': { after: prodAsDemo },
};
