// Fixtures of the env, schedule, enroll, tags, nodes, query, carves, sinks and audit examples.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';
import { ensureNoSink, ensureNoTag, ensureSink, ensureTag, noSinks, packed, scheduled } from './helpers.js';

const PACKS_YAML = `web:
  platform: linux
  queries:
    procs:
      query: SELECT pid, name FROM processes
      interval: 300
    listening:
      query: SELECT pid, port FROM listening_ports
      interval: 600
`;

/** The demo agent listener's certificate (a real PEM), as `--certificate ./fleet.pem` reads it. */
const agentCertificate = (sb: Sandbox) => {
  const path = /certificate (\S+\.pem)/.exec(sb.world.banner())?.[1];
  if (!path) throw new Error('no agent certificate in the banner');
  copyFileSync(path, join(sb.cwd, 'fleet.pem'));
};

/**
 * A host with osquery installed and systemd, as enroll.sh expects: `osqueryd` is found, and
 * `systemctl` records what it was asked (in <sandbox>/systemctl.log) instead of starting services.
 */
const osqueryHost = (sb: Sandbox) => {
  const bin = join(sb.root, 'host-bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'osqueryd'), '#!/bin/sh\necho "osqueryd version 5.12.1"\n');
  writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\necho "systemctl $*" >> '${join(sb.root, 'systemctl.log')}'\n`);
  for (const f of ['osqueryd', 'systemctl']) chmodSync(join(bin, f), 0o755);
  sb.env.PATH = `${bin}:${sb.shellEnv().PATH}`;
};

/** What the example wrote under /etc (the overlay's upper directory in the sandbox). */
const etcFile = (sb: Sandbox, path: string) => readFileSync(join(sb.root, 'root', 'etc', path), 'utf8');

const tag =
  (name: string, env = 'prod') =>
  (sb: Sandbox) =>
    ensureTag(sb.world, env, name);

/** The http sink the SIEM examples add to the global scope. */
const SIEM = { url: 'https://siem.example.com/osquery', timeout_seconds: 10 };
const archive = (sb: Sandbox) =>
  ensureSink(sb.world, 'prod', { name: 'archive', type: 'file', source: 'result', config: { path: 'prod/results.log' } });
const siem = (sb: Sandbox) =>
  ensureSink(sb.world, 'global', { name: 'siem', type: 'http', source: 'status', config: SIEM, enabled: false });
const noTag =
  (name: string, env = 'prod') =>
  (sb: Sandbox) =>
    ensureNoTag(sb.world, env, name);

export const FLEET_FIXTURES: Record<string, Fixture> = {
  // env
  'fleetctl env config prod --set packs packs.yaml': { files: { 'packs.yaml': PACKS_YAML } },
  // An editor as scripts use it ($EDITOR as git and kubectl run it: through the shell, the file as $1).
  'fleetctl env config prod --edit': {
    setup: async (sb) => {
      await scheduled(sb.world, 'prod', { users_query: true });
      sb.env.EDITOR = "sed -i 's/interval: 300/interval: 900/'";
    },
    check: async (_r, sb) => {
      const r = await sb.world.api('GET', '/api/v1/environments/prod/config/schedule');
      expect((r.body as { schedule: Record<string, { interval: number }> }).schedule.users_query?.interval).toBe(900);
    },
  },

  // schedule
  'fleetctl schedule add prod users_query --query "SELECT uid, username FROM users" --interval 300': {
    setup: (sb) => scheduled(sb.world, 'prod', { users_query: false }),
  },
  'fleetctl schedule edit prod users_query --interval 600 --platform linux,darwin': {
    setup: (sb) => scheduled(sb.world, 'prod', { users_query: true }),
  },
  'fleetctl schedule edit prod users_query --interval 600': { setup: (sb) => scheduled(sb.world, 'prod', { users_query: true }) },
  'fleetctl schedule show prod users_query': { setup: (sb) => scheduled(sb.world, 'prod', { users_query: true }) },
  'fleetctl schedule remove prod users_query --yes': { setup: (sb) => scheduled(sb.world, 'prod', { users_query: true }) },
  'fleetctl schedule remove prod users_query': {
    setup: (sb) => scheduled(sb.world, 'prod', { users_query: true }),
    terminal: [[/Remove .*users_query/, 'y']],
  },
  'fleetctl schedule remove prod users_query procs --yes': {
    setup: (sb) => scheduled(sb.world, 'prod', { users_query: true, procs: true }),
  },
  'fleetctl schedule add prod procs --query-file procs.sql --interval 60 --platform linux --snapshot': {
    files: { 'procs.sql': 'SELECT pid, name, path FROM processes;\n' },
    setup: (sb) => scheduled(sb.world, 'prod', { procs: false }),
  },
  'fleetctl schedule edit prod procs --no-snapshot --platform all': { setup: (sb) => scheduled(sb.world, 'prod', { procs: true }) },
  'fleetctl schedule list prod --pack web -o json': { setup: (sb) => packed(sb.world, 'prod', 'web', { procs: true }) },
  'fleetctl schedule show prod procs --pack web -o json': { setup: (sb) => packed(sb.world, 'prod', 'web', { procs: true }) },
  'fleetctl schedule add prod listening --pack network --query "SELECT * FROM listening_ports" --interval 600': {
    setup: (sb) => packed(sb.world, 'prod', 'network', { open_sockets: true, listening: false }),
  },

  // enroll
  'fleetctl enroll show prod enroll.sh | sh': {
    namespaces: ['mount'],
    setup: osqueryHost,
    check: (_r, sb) => {
      const flags = etcFile(sb, 'osquery/osquery.flags');
      expect(flags).toContain('--enroll_secret_path=/etc/osquery/fleetctl.secret');
      expect(flags).toContain('--tls_server_certs=/etc/osquery/certs/fleetctl.crt');
      expect(flags).not.toMatch(/__[A-Z_]+__/);
      expect(etcFile(sb, 'osquery/fleetctl.secret').trim()).toMatch(/^[0-9a-f]{32,}$/);
      expect(readFileSync(join(sb.root, 'systemctl.log'), 'utf8')).toContain('systemctl restart osqueryd');
    },
  },
  // osquery's directory exists on a host where osquery is installed.
  'fleetctl enroll show prod flagsLinux > /etc/osquery/osquery.flags': {
    namespaces: ['mount'],
    setup: (sb) => void mkdirSync(join(sb.root, 'root', 'etc', 'osquery'), { recursive: true }),
    check: (_r, sb) => expect(etcFile(sb, 'osquery/osquery.flags')).toContain('--enroll_secret_path=/etc/osquery/fleetctl.secret'),
  },
  'fleetctl enroll expire prod': { terminal: [[/Expire enrollment of prod/, 'y']] },
  'fleetctl enroll rotate prod': { terminal: [[/Rotate the enroll secret of prod/, 'y']] },
  'fleetctl enroll update prod --certificate ./fleet.pem --deb-url https://pkg.example.com/osquery.deb': { setup: agentCertificate },
  'fleetctl enroll update prod --certificate ./fleet.pem': { setup: agentCertificate },

  // tags
  'fleetctl tags add hipaa --description "In HIPAA scope" --color "#d9534f"': { setup: noTag('hipaa') },
  'fleetctl tags add eu-west --custom "region eu-west" --icon "fas fa-globe"': { setup: noTag('eu-west') },
  'fleetctl tags remove quarantine --yes': { setup: tag('quarantine') },
  'fleetctl tags remove quarantine': { setup: tag('quarantine'), terminal: [[/Delete tag quarantine from prod/, 'y']] },
  'fleetctl tags remove old-tag --env staging --yes': { setup: tag('old-tag', 'staging') },
  'fleetctl tags apply quarantine --status inactive --platform windows': { setup: tag('quarantine') },
  'fleetctl tags apply quarantine --risk high': { setup: tag('quarantine') },
  'fleetctl tags apply quarantine -q 10.1.0. --status inactive -o json': { setup: tag('quarantine') },
  'fleetctl tags unapply quarantine prod-web-0013': { setup: tag('quarantine') },
  'fleetctl tags unapply quarantine --status active': { setup: tag('quarantine') },
  "fleetctl nodes list --health unhealthy --all -o json --jq '.[].uuid' | fleetctl tags apply review -": { setup: tag('review') },

  // nodes
  'fleetctl nodes delete prod-vpn-0041': { terminal: [[/Delete .*prod-vpn-0041/, 'y']] },

  // live queries and carves: every target must answer, so they run where prod holds only live agents
  'fleetctl query run "SELECT * FROM os_version" --target all --wait 30s': { world: 'live' },
  'fleetctl query run "SELECT name, pid FROM processes" --target platform:linux --json': { world: 'live' },
  'fleetctl query run "SELECT * FROM os_version" --target status:active --exit --json': { world: 'live' },
  'fleetctl query run "SELECT * FROM uptime" --target platform:darwin --target tag:pci': { world: 'live' },
  'fleetctl query run "SELECT * FROM listening_ports" --target tag:pci --wait 5m': { world: 'live' },
  'name=$(fleetctl carves run /etc/passwd --target tag:pci --exit --wait 5m) && fleetctl carves download "$name"': {
    world: 'live',
    check: (r) => expect(r.stderr).toMatch(/^Downloaded carve_\w+ of (mac-\S+)/m),
  },
  'fleetctl carves delete carve_tmp_payload': { terminal: [[/Delete carve carve_tmp_payload in prod\?/, 'y']] },
  'fleetctl carves expire carve_auth_log': { terminal: [[/Expire carve carve_auth_log in prod\?/, 'y']] },

  // sinks: `archive` (a file sink of prod) and `siem` (a global http sink) are what the examples add, then edit
  'fleetctl sinks add prod --name archive --type file --source result --config \'{"path":"prod/results.log"}\'': {
    setup: (sb) => ensureNoSink(sb.world, 'prod', 'archive'),
  },
  'fleetctl sinks add global --name siem --type http --source status --config @siem.json --disabled': {
    files: { 'siem.json': JSON.stringify(SIEM) },
    setup: (sb) => ensureNoSink(sb.world, 'global', 'siem'),
  },
  'fleetctl sinks edit archive prod --set max_size_mb=500': { setup: archive },
  'fleetctl sinks edit archive prod --set max_size_mb=500 --set max_files=10': { setup: archive },
  'fleetctl sinks test archive prod': { setup: archive },
  'fleetctl sinks test archive prod -o json': { setup: archive },
  'fleetctl sinks disable archive prod': { setup: archive },
  'fleetctl sinks edit siem global --set url=https://logs.example.com/osquery --set headers_env.Authorization=SIEM_TOKEN': { setup: siem },
  'fleetctl sinks edit siem global --unset timeout_seconds --info "SIEM gateway"': { setup: siem },
  'fleetctl sinks enable siem global': { setup: siem },
  'fleetctl sinks remove 5': { terminal: [[/Delete log sink 5/, 'y']] },
  // The demo's dev environment has no sinks; `sinks clone --from prod --to dev` may have run before.
  'echo \'{"source_environment_id":1,"target_environment_id":3}\' | fleetctl api POST /api/v1/log-sinks/clone --input -': {
    setup: (sb) => noSinks(sb.world, 3),
  },
  'fleetctl sinks clone --from prod --to dev': { setup: (sb) => noSinks(sb.world, 3) },

  // audit --follow runs until Ctrl-C. The jq pipeline at a terminal, as a user runs it: jq
  // buffers its output when it does not write to one.
  'fleetctl audit list --follow': { stop: /\S/ },
  'fleetctl audit list --follow --service api': { stop: /\S/ },
  // jq keeps the warnings: a failed login (severity 2) happens while it follows.
  'fleetctl audit list --follow -o json | jq -c "select(.severity > 1)"': {
    terminal: [],
    during: async (sb) =>
      void (await sb.world.api('POST', '/api/v1/login/prod', { username: 'analyst', password: 'not-the-password' }, [401])),
    stop: /"severity":[23]/,
  },
};
