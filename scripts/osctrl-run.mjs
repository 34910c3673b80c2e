#!/usr/bin/env node
// Runs every README command of the built fleetctl against a real osctrl-api, as users of every
// permission level, and writes docs/osctrl.md's table from what happened (issue 29). It builds and
// starts nothing of osctrl: point it at one you run (docs/osctrl.md, "How this was verified").
//
//   OSCTRL_URL=http://127.0.0.1:9000 OSCTRL_USERNAME=admin OSCTRL_PASSWORD=... \
//     node scripts/osctrl-run.mjs [--doc docs/osctrl.md] [--record test/fixtures/osctrl/recorded.json]
//
// OSCTRL_URL: the osctrl-api (http or https; OSCTRL_INSECURE=1 for a self-signed certificate).
// OSCTRL_USERNAME/OSCTRL_PASSWORD: a super-admin. OSCTRL_ENV and OSCTRL_ENV2 (default prod and
// dev): two environments, the first with at least two nodes enrolled through osctrl-tls and
// answering live queries (the run waits for their answers and carves one file). The run adds and
// removes users erin, quinn, carla, bob and dora, a tag pci-XXXX, an environment lab, scheduled
// queries uptime_run and log_probe; rotates the second environment's enroll path; changes
// admin/inactive_hours and the first environment's options and puts them back; deletes the last
// node of the first environment when it has three or more (osctrl-tls keeps serving that agent
// from its cache: restart it with an empty database to enroll it again). Checks of commands this fleetctl does
// not have are skipped (said on the console).
//
// fleetctl talks to osctrl through a recording proxy of this script, so every check knows what
// reached osctrl; a refusal (exit 8) counts only if nothing did. --record writes the exchanges,
// bodies as they came off the wire (key order and bytes kept), secrets replaced by REDACTED-*.
import { createServer, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const { values: opt } = parseArgs({ options: { doc: { type: 'string' }, record: { type: 'string' }, only: { type: 'string' } } });
const TARGET = process.env.OSCTRL_URL;
const ADMIN = process.env.OSCTRL_USERNAME ?? 'admin';
const ADMIN_PASSWORD = process.env.OSCTRL_PASSWORD;
const ENV = process.env.OSCTRL_ENV ?? 'prod';
const ENV2 = process.env.OSCTRL_ENV2 ?? 'dev';
const BIN = resolve(process.env.FLEETCTL_BIN ?? join(ROOT, 'bin/fleetctl.cjs'));
if (!TARGET || !ADMIN_PASSWORD) {
  console.error('set OSCTRL_URL (an osctrl-api) and OSCTRL_PASSWORD (of the super-admin OSCTRL_USERNAME, default admin)');
  process.exit(2);
}
const target = new URL(TARGET);

// ---------------------------------------------------------------------------------------------
// The recording proxy: every exchange, raw, tagged with the check that caused it.
const exchanges = [];
let current = 0; // the check running (0: set-up)
const proxy = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const reqBody = Buffer.concat(chunks);
    const headers = { ...req.headers, host: target.host };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const up = send(
      {
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers,
        rejectUnauthorized: process.env.OSCTRL_INSECURE !== '1',
      },
      (r) => {
        const out = [];
        r.on('data', (c) => out.push(c));
        r.on('end', () => {
          const body = Buffer.concat(out);
          const u = new URL(req.url, 'http://x');
          exchanges.push({
            check: current,
            method: req.method,
            path: u.pathname,
            query: u.search.slice(1),
            request: reqBody.length ? reqBody.toString('utf8') : null,
            status: r.statusCode,
            content_type: r.headers['content-type'] ?? '',
            retry_after: r.headers['retry-after'],
            allow: r.headers.allow,
            body,
          });
          res.writeHead(r.statusCode, r.headers);
          res.end(body);
        });
      },
    );
    up.on('error', (e) => {
      res.writeHead(502);
      res.end(`proxy: ${e.message}`);
    });
    up.end(reqBody);
  });
});
await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
const URL_ = `http://127.0.0.1:${proxy.address().port}`;

// ---------------------------------------------------------------------------------------------
// fleetctl, one config directory per user.
const dirs = new Map();
const dirOf = (as) => {
  if (!dirs.has(as)) dirs.set(as, mkdtempSync(join(tmpdir(), `osctrl-run-${as}-`)));
  return dirs.get(as);
};
const work = mkdtempSync(join(tmpdir(), 'osctrl-run-work-'));
function fleetctl(as, args, input, stopAfter) {
  const env = {
    ...process.env,
    FLEETCTL_CONFIG_DIR: dirOf(as),
    FLEETCTL_PAGER: 'cat',
    DBUS_SESSION_BUS_ADDRESS: 'disabled:',
    NO_COLOR: '1',
  };
  for (const k of Object.keys(env)) if (k.startsWith('FLEETCTL_') && !['FLEETCTL_CONFIG_DIR', 'FLEETCTL_PAGER'].includes(k)) delete env[k];
  return new Promise((done) => {
    // stopAfter: a command that runs until interrupted (a follow) gets Ctrl-C's SIGINT then.
    const p = execFile(
      'node',
      [BIN, ...args],
      { env, cwd: work, maxBuffer: 64 << 20, timeout: stopAfter ?? 300_000, killSignal: stopAfter ? 'SIGINT' : 'SIGTERM' },
      (err, stdout, stderr) => done({ exitCode: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
    p.stdin.end(input ?? '');
  });
}

const pw = () => `Run-${randomBytes(9).toString('base64url')}`;
const users = {
  [ADMIN]: { level: 'super-admin', password: ADMIN_PASSWORD, env: ENV },
  erin: { level: 'env admin', password: pw(), env: ENV },
  quinn: { level: 'query level', password: pw(), env: ENV },
  carla: { level: 'carve level', password: pw(), env: ENV },
  bob: { level: 'user level', password: pw(), env: ENV2 },
};
const loginArgs = (u) => ['login', '--url', URL_, '--env', users[u].env, '--username', u, '--password-stdin', '--insecure-storage'];

// ---------------------------------------------------------------------------------------------
// The checks. expect: the exit code a user should get; refused: exit 8 with nothing sent;
// verify(r): a reason the output is wrong, or nothing. ctx holds what earlier checks learned.
const ctx = {};
// osctrl keeps a removed tag's node rows, and tagging such a node again answers 500: a tag name of its own per run.
const TAG = `pci-${Date.now().toString(36).slice(-4)}`;
const json = (r) => JSON.parse(r.stdout);
const has = (re, what) => (r) => (re.test(r.stdout + r.stderr) ? undefined : `${what} not said`);
const checks = [];
const c = (as, args, o = {}) => checks.push({ as, args, ...o });

// Users the run needs, made with fleetctl itself (the first checks).
c(ADMIN, () => loginArgs(ADMIN), { input: () => users[ADMIN].password, note: 'super-admin' });
c(ADMIN, ['users', 'add', 'erin', '--environment', ENV, '--level', 'admin', '--password-stdin'], {
  input: () => users.erin.password,
  note: 'env admin',
});
c(ADMIN, ['users', 'add', 'quinn', '--environment', ENV, '--level', 'query', '--password-stdin'], { input: () => users.quinn.password });
c(ADMIN, ['users', 'add', 'carla', '--environment', ENV, '--level', 'carve', '--password-stdin'], { input: () => users.carla.password });
c(ADMIN, ['users', 'add', 'bob', '--environment', ENV2, '--level', 'user', '--password-stdin'], { input: () => users.bob.password });
for (const u of ['erin', 'quinn', 'carla', 'bob']) c(u, () => loginArgs(u), { input: () => users[u].password, note: users[u].level });
c('bob', () => loginArgs('bob'), { input: () => 'wrong-password-1', expect: 4, note: 'wrong password: exit 4' });
c('bob', () => [...loginArgs('bob'), '--totp-code', '123456'], {
  input: () => users.bob.password,
  note: 'the code is not used (said on stderr)',
  verify: (r) => (/not used|no second factor|ignored/i.test(r.stderr) ? undefined : 'no word about the code'),
});
c(ADMIN, ['auth', 'status', '--check'], { note: 'verified' });
c('quinn', ['auth', 'status', '-o', 'json'], { verify: (r) => (json(r).verified === true ? undefined : 'not verified') });
c(ADMIN, ['auth', 'token'], { verify: (r) => (/^eyJ/.test(r.stdout) ? undefined : 'no token printed') });
c(ADMIN, ['config', 'list'], { note: 'local' });
c(ADMIN, ['config', 'show'], { note: 'local' });
c(ADMIN, ['config', 'set', 'env', ENV], { note: 'local' });
c(ADMIN, ['config', 'use', 'default'], { note: 'local' });
c(ADMIN, ['mfa', 'status'], { note: 'none: osctrl has no second factor' });
c(ADMIN, ['mfa', 'totp', 'setup'], { refused: true });
c(ADMIN, ['mfa', 'totp', 'disable', '--password-stdin'], { refused: true, input: () => 'x' });
c(ADMIN, ['mfa', 'recovery-codes', 'regenerate', '--yes', '--password-stdin'], { refused: true, input: () => 'x' });
c(ADMIN, ['mfa', 'webauthn', 'list'], { refused: true });
c(ADMIN, ['mfa', 'webauthn', 'remove', 'x', '--yes', '--password-stdin'], { refused: true, input: () => 'x' });

// Environments and enrollment.
c(ADMIN, ['env', 'list'], {
  verify: has(new RegExp(`\\b${ENV}\\b[\\s\\S]*\\b${ENV2}\\b|\\b${ENV2}\\b[\\s\\S]*\\b${ENV}\\b`), 'both environments'),
});
c('quinn', ['env', 'list'], {
  note: 'the environments the user may read, no map request',
  verify: (r, sent) => (sent.some((s) => s.path.includes('/map/')) ? 'asked the map' : undefined),
});
c(ADMIN, ['env', 'show', ENV]);
c(ADMIN, ['env', 'show', 'nope'], { expect: 3, note: 'osctrl 404' });
c(ADMIN, ['env', 'map']);
c(ADMIN, ['env', 'map', 'uuid', '-o', 'json']);
c(ADMIN, ['env', 'intervals', ENV2, '--config', '600'], { refused: true, note: "osctrl's API cannot put it in the agents' flags" });
c(ADMIN, ['env', 'create', 'lab', '--agent-host', target.hostname, '--query', '30'], {
  needs: ['env', 'create'],
  note: 'osctrl 201, then its intervals',
});
c(ADMIN, ['env', 'create', 'lab', '--agent-host', target.hostname], { needs: ['env', 'create'], expect: 6, note: 'exists: osctrl 409' });
c(ADMIN, ['env', 'intervals', 'lab', '--query', '20', '--log', '60'], {
  needs: ['env', 'create'],
  note: 'stored, and in the options agents read',
  verify: (r, sent) => (sent.some((s) => s.method === 'PATCH' && s.path.includes('/config/')) ? undefined : 'not sent to agents'),
});
c(ADMIN, ['env', 'create', 'lab2', '--agent-host', target.hostname, '--config', '60'], {
  needs: ['env', 'create'],
  refused: true,
  note: 'a config interval: see env intervals',
});
c(ADMIN, ['env', 'create', 'lab.eu', '--agent-host', target.hostname], {
  needs: ['env', 'create'],
  expect: 2,
  note: 'osctrl names: a-z 0-9 - _, checked before any request',
  verify: (r, sent) => (sent.length ? 'a request was sent' : undefined),
});
c(ADMIN, ['env', 'create', 'lab2', '--agent-host', `${target.hostname}:8443`], {
  needs: ['env', 'create'],
  refused: true,
  note: "osctrl's API takes no port",
});
c(ADMIN, ['env', 'create', 'lab2', '--agent-host', target.hostname, '--enroll-window', '7d'], { needs: ['env', 'create'], refused: true });
c(ADMIN, ['env', 'create', 'lab2'], { needs: ['env', 'create'], expect: 2, note: 'osctrl needs the agent host' });
c('quinn', ['env', 'create', 'lab2', '--agent-host', target.hostname], { needs: ['env', 'create'], expect: 5, note: 'super-admins only' });
c(ADMIN, ['env', 'edit', 'lab', '--no-enroll'], {
  needs: ['env', 'edit'],
  verify: (r) => (/closed/i.test(r.stdout + r.stderr) ? undefined : 'not said closed'),
});
c(ADMIN, ['env', 'edit', 'lab', '--name', 'lab-b', '--enroll', '--log', '120'], { needs: ['env', 'edit'] });
c(ADMIN, ['env', 'show', 'lab-b'], { needs: ['env', 'delete'] });
c(ADMIN, ['env', 'delete', 'lab-b', '--yes'], { needs: ['env', 'delete'] });
c(ADMIN, ['env', 'show', 'lab-b'], { needs: ['env', 'delete'], expect: 3, note: 'deleted' });
c(ADMIN, ['enroll', 'show', ENV2, 'secret']);
c(ADMIN, ['enroll', 'show', ENV2, 'cert']);
c(ADMIN, ['enroll', 'show', ENV2, 'flags']);
c(ADMIN, ['enroll', 'show', ENV2, 'flagsLinux']);
c(ADMIN, ['enroll', 'show', ENV2, 'enroll.sh']);
c(ADMIN, ['enroll', 'show', ENV2, 'enroll.ps1']);
c(ADMIN, ['enroll', 'show', ENV2, 'remove.sh']);
c(ADMIN, ['enroll', 'show', ENV2, 'remove.ps1']);
c(ADMIN, ['enroll', 'extend', ENV2]);
c(ADMIN, ['enroll', 'expire', ENV2, '--yes']);
c(ADMIN, ['enroll', 'notexpire', ENV2]);
c(ADMIN, ['enroll', 'rotate', ENV2, '--yes'], {
  expect: 1,
  note: 'osctrl renews the enroll path and keeps the secret: said, exit 1',
  verify: has(/kept|same enroll secret|not rotated/i, 'that the secret was kept'),
});
c(ADMIN, ['enroll', 'update', ENV2, '--deb-url', 'https://pkgs.example.com/osquery.deb']);
c('quinn', ['enroll', 'show', ENV, 'secret'], { expect: 5, note: 'env admin only (osctrl)' });

// Nodes.
c(ADMIN, ['nodes', 'list'], { note: 'nodes enrolled through osctrl-tls by real osquery agents' });
c(ADMIN, ['nodes', 'list', '--status', 'active', '--platform', 'linux', '--sort', 'hostname', '--order', 'desc', '-o', 'json'], {
  verify: (r) => (json(r).length ? undefined : 'no active Linux node'),
});
c(ADMIN, ['nodes', 'list', '--all', '-o', 'jsonl']);
c(ADMIN, () => ['nodes', 'list', '-q', ctx.node1.slice(0, 4)], {
  verify: (r) => (r.stdout.includes(ctx.node1) ? undefined : 'search missed the node'),
});
c(ADMIN, ['nodes', 'list', '--tag', 'web'], { refused: true });
c(ADMIN, ['nodes', 'list', '--risk', 'high', '--all', '--json'], { refused: true, note: 'README example; osctrl has no risk' });
c('bob', ['nodes', 'list'], { note: `user level on ${ENV2}` });
c(ADMIN, () => ['nodes', 'show', ctx.node1]);
c(ADMIN, () => ['nodes', 'show', ctx.node1, '-o', 'json']);
c(ADMIN, ['nodes', 'show', 'no-such-node'], { expect: 3 });
c(ADMIN, ['nodes', 'list', '--env', 'nope'], { expect: 3, note: 'unknown environment' });

// Tags.
c(ADMIN, ['tags', 'list'], { note: 'NODES: see the tag counts below' });
c(ADMIN, ['tags', 'add', TAG, '--description', 'PCI scope']);
c(ADMIN, ['tags', 'add', TAG, '--description', 'PCI scope'], { expect: 6, note: 'existing tag: osctrl 409' });
c(ADMIN, ['tags', 'edit', TAG, '--description', 'PCI DSS scope']);
c(ADMIN, ['tags', 'show', TAG]);
c(ADMIN, ['tags', 'show', TAG, '--nodes'], { refused: true });
c(ADMIN, () => ['tags', 'apply', TAG, ctx.node1, ctx.node2]);
c(ADMIN, () => ['tags', 'apply', TAG, ctx.node1], {
  note: 'already tagged: osctrl 500, said as a warning',
  verify: has(/already had tag/, 'already tagged'),
});
c(ADMIN, ['tags', 'apply', TAG, '--platform', 'linux']);
c(ADMIN, ['tags', 'apply', TAG, '--risk', 'high'], { refused: true, note: 'README example' });
c(ADMIN, () => ['tags', 'unapply', TAG, ctx.node1], { refused: true });
c(ADMIN, ['tags', 'list', '-o', 'json'], { record: ['tagged', /tags/], note: 'after tagging' });
c(ADMIN, ['tags', 'remove', TAG, '--yes']);
c(ADMIN, ['tags', 'remove', TAG, '--yes'], { expect: 3, note: 'already removed: osctrl 404' });
c('quinn', ['tags', 'list'], { expect: 5, note: 'tags are for env admins on osctrl' });

// Users.
c(ADMIN, ['users', 'list']);
c(ADMIN, ['users', 'show', 'quinn']);
c('quinn', ['users', 'me']);
c(ADMIN, ['users', 'add', 'dora', '--environment', ENV, '--level', 'query', '--password-stdin'], {
  input: () => pw(),
  note: 'then dora can run queries',
});
c(ADMIN, ['users', 'add', 'dora', '--environment', ENV, '--password-stdin'], {
  input: () => pw(),
  expect: 1,
  note: 'existing user: osctrl 500',
});
c(ADMIN, ['users', 'add', 'eve', '--password-stdin'], {
  input: () => 'short',
  expect: 2,
  note: 'password policy checked before any request',
  verify: (r, sent) => (sent.length ? 'a request was sent' : undefined),
});
c(ADMIN, ['users', 'edit', 'dora', '--environment', ENV2, '--level', 'admin']);
c(ADMIN, ['users', 'edit', 'dora', '--fullname', 'Dora Explorer']);
c(ADMIN, ['users', 'edit', 'dora', '--password-stdin'], {
  input: () => pw(),
  note: 'says her sessions stay valid',
  verify: has(/stays? valid|remains? valid|still valid/i, 'that sessions stay valid'),
});
c(ADMIN, ['users', 'edit', 'dora', '--api'], { refused: true });
c(ADMIN, ['users', 'add', 'eve', '--environment', 'nope', '--password-stdin'], {
  input: () => pw(),
  expect: 3,
  note: 'unknown env: nothing sent',
});
c(ADMIN, ['users', 'remove', 'nosuchuser', '--yes'], { expect: 3 });
c(ADMIN, ['users', 'remove', ADMIN, '--yes'], { expect: 1, note: 'yourself: osctrl 400', record: ['self', /users/] });
c(ADMIN, ['users', 'remove', 'dora', '--yes']);
c('quinn', ['users', 'list'], { expect: 5 });

// Settings.
c(ADMIN, ['settings', 'list', 'admin']);
c(ADMIN, ['settings', 'list', 'tls', ENV]);
c(ADMIN, ['settings', 'set', 'admin', 'inactive_hours', '48']);
c(ADMIN, ['settings', 'set', 'admin', 'inactive_hours', '72']);
c(ADMIN, ['settings', 'set', 'admin', 'inactive_hours', '24', '--env', ENV], { refused: true });

// Live queries and carves: the nodes must answer.
c(ADMIN, ['query', 'run', 'SELECT * FROM os_version', '--wait', '60s', '--exit'], {
  record: ['os_version', /queries/],
  note: 'every node answers',
  verify: (r) => (r.stdout.trim().split('\n').length > 1 ? undefined : 'no answer'),
});
c(ADMIN, ['query', 'run', 'SELECT version FROM osquery_info', '--target', 'platform:linux', '--wait', '60s', '--exit', '-o', 'json'], {
  record: ['osquery_info', /queries/],
  note: 'platform bucket expanded',
});
c(ADMIN, () => ['query', 'run', 'SELECT hostname FROM system_info', '--target', ctx.node1, '--wait', '60s', '--exit'], {
  record: ['system_info', /queries/],
  note: 'by hostname',
});
c(ADMIN, ['query', 'run', 'SELECT * FROM uptime', '--target', 'platform:linux', '--target', 'tag:prod'], {
  refused: true,
  note: 'osctrl intersects kinds',
});
c(ADMIN, ['query', 'run', 'SELECT * FROM os_version', '--target', 'status:active', '--exit'], {
  refused: true,
  note: 'README example; osctrl would target every node',
});
c('quinn', ['query', 'run', 'SELECT total_seconds FROM uptime', '--wait', '60s', '--exit'], {
  record: ['uptime', /queries/],
  note: 'query level',
});
c(ADMIN, ['query', 'run', 'SELECT name FROM processes LIMIT 3', '--detach'], {
  verify: (r) => {
    ctx.query = /query_[0-9a-f]{32}/.exec(r.stdout + r.stderr)?.[0];
    return ctx.query ? undefined : 'no query name';
  },
});
c(ADMIN, ['query', 'list']);
c(ADMIN, ['query', 'list', '--status', 'active']);
c(ADMIN, () => ['query', 'results', ctx.query, '-o', 'json'], {
  note: 'the detached query, answered',
  before: () => answered(ctx.query),
  verify: (r) => (json(r).length ? undefined : 'no answer'),
});
c(ADMIN, () => ['query', 'show', ctx.query], { record: ['targets', /queries/], note: 'with its targets' });
c(ADMIN, ['query', 'show', 'query_nope'], { expect: 3, note: 'osctrl answers 200 with an empty record' });
c(ADMIN, () => ['query', 'cancel', ctx.query], { note: 'osctrl expire' });
c(ADMIN, ['query', 'list', '--status', 'expired']);
c('carla', ['query', 'run', 'SELECT * FROM uptime'], { expect: 5, note: 'no query level' });
c('carla', () => ['carves', 'run', '/etc/hosts', '--target', ctx.node1, '--wait', '120s'], {
  note: 'carve level',
  verify: (r) => {
    ctx.carve = /carve_[0-9a-f]{32}/.exec(r.stdout + r.stderr)?.[0];
    return ctx.carve ? undefined : 'no carve name';
  },
});
c(ADMIN, ['carves', 'list']);
c(ADMIN, ['carves', 'list', '--status', 'completed']);
c(ADMIN, ['carves', 'list', '--status', 'pending'], { refused: true, note: 'osctrl cannot filter on pending' });
c(ADMIN, () => ['carves', 'show', ctx.carve], { record: ['uploaded', /carves/] });
c(ADMIN, ['carves', 'show', 'carve_nope'], { expect: 3, note: 'unknown carve' });
c('carla', () => ['carves', 'download', ctx.carve, '-O', 'carve.tar', '--force'], { note: 'size and blocks checked' });
c(ADMIN, () => ['carves', 'download', ctx.carve, '--node', ctx.node1, '--force'], { note: 'README example: NAME_HOST_SESSION.tar' });
c(ADMIN, () => ['carves', 'archive', ctx.carve], { refused: true });
c(ADMIN, () => ['carves', 'complete', ctx.carve]);
c(ADMIN, () => ['carves', 'expire', ctx.carve, '--yes']);
c(ADMIN, () => ['carves', 'delete', ctx.carve, '--yes'], { refused: true, note: "osctrl's delete keeps the files and still serves them" });
c(ADMIN, () => ['api', 'POST', `/api/v1/carves/${ENV}/delete/${ctx.carve}`], { note: "osctrl's own delete: the carve marked deleted" });
c(ADMIN, () => ['carves', 'download', ctx.carve, '-O', 'deleted.tar', '--force'], {
  note: 'osctrl still serves a carve it marked deleted: downloaded',
});
c('quinn', ['carves', 'list'], { expect: 5, note: 'no carve level' });

// Sinks, audit, stats, raw API, local commands.
c(ADMIN, ['sinks', 'list'], { refused: true });
c(ADMIN, ['sinks', 'show', '1'], { refused: true });
c(ADMIN, ['sinks', 'add', '--name', 'x', '--type', 'stdout', '--source', 'result'], { refused: true });
c(ADMIN, ['sinks', 'remove', '1', '--yes'], { refused: true });
c(ADMIN, ['sinks', 'clone', '--from', ENV, '--to', ENV2], { refused: true });
c(ADMIN, ['sinks', 'edit', '1', '--name', 'x'], { needs: ['sinks', 'edit'], refused: true });
c(ADMIN, ['sinks', 'enable', '1'], { needs: ['sinks', 'enable'], refused: true });
c(ADMIN, ['sinks', 'disable', '1'], { needs: ['sinks', 'disable'], refused: true });
c(ADMIN, ['sinks', 'test', '1'], { needs: ['sinks', 'test'], refused: true });
c(ADMIN, ['schedule', 'add', ENV, 'log_probe', '--query', 'SELECT total_seconds FROM uptime', '--interval', '10'], {
  needs: ['logs'],
  note: 'for the logs checks',
});
c(ADMIN, () => ['logs', '--node', ctx.node1, '--type', 'result', '-q', 'log_probe', '--limit', '3', '-o', 'json'], {
  needs: ['logs'],
  note: 'results the real agent sent (osctrl searches the text)',
  before: () => logged(ctx.node1),
  verify: (r) => (json(r).length && json(r).every((l) => JSON.stringify(l).includes('log_probe')) ? undefined : 'no log_probe line'),
});
c(ADMIN, () => ['logs', '--node', ctx.node1, '--type', 'result', '--follow'], {
  needs: ['logs'],
  stopAfter: 30_000,
  expect: 130,
  note: 'followed 30 s while the agent sent, then Ctrl-C',
  verify: (r) => (/log_probe/.test(r.stdout) ? undefined : 'no new line followed'),
});
c(ADMIN, () => ['logs', '--node', ctx.node1, '--query', 'log_probe'], {
  needs: ['logs'],
  refused: true,
  note: 'osctrl cannot select by scheduled query',
});
c(ADMIN, () => ['logs', '--node', ctx.node1, '--all'], { needs: ['logs'], refused: true, note: 'osctrl returns the newest 1000' });
c(ADMIN, () => ['logs', '--node', ctx.node1, '--limit', '5'], { needs: ['logs'] });
c(ADMIN, () => ['logs', '--node', ctx.node1, '--type', 'status', '--limit', '3', '-o', 'json'], { needs: ['logs'] });
c(ADMIN, () => ['nodes', 'show', ctx.node1, '-o', 'json'], {
  needs: ['logs'],
  note: 'status problems from its status lines',
  verify: (r) => (Array.isArray(json(r).status_problems) ? undefined : 'no status_problems'),
});
c(ADMIN, ['logs'], { needs: ['logs'], refused: true, note: 'osctrl reads logs node by node' });
c(ADMIN, () => ['logs', '--node', ctx.node1, '--severity', 'warning'], { needs: ['logs'], refused: true });
c(ADMIN, ['schedule', 'report', ENV, 'log_probe'], { needs: ['schedule', 'report'], refused: true });
c(ADMIN, ['schedule', 'remove', ENV, 'log_probe', '--yes'], { needs: ['logs'] });
c(ADMIN, ['audit', 'list', '--limit', '20']);
c(ADMIN, ['audit', 'list', '--env', ENV, '--limit', '5']);
c(ADMIN, ['audit', 'list', '--user', 'quinn', '--limit', '5', '-o', 'json'], {
  note: 'exact user (osctrl matches substrings)',
  verify: (r) => (json(r).every((e) => e.username === 'quinn') ? undefined : 'another user listed'),
});
c(ADMIN, ['audit', 'list', '--service', 'osctrl-api', '--limit', '5']);
c('quinn', ['audit', 'list', '--limit', '5'], { note: 'own entries' });
c(ADMIN, ['audit', 'list', '-q', 'login'], { refused: true });
c(ADMIN, ['stats']);
c('quinn', ['stats', '-o', 'json']);
c(ADMIN, ['api', 'GET', `/api/v1/nodes/${ENV}`], { note: "osctrl's own shapes" });
c(ADMIN, ['api', 'GET', `/api/v1/nodes/${ENV}`, '--paginate', '--jq', '.[].hostname'], { note: 'README example' });
c(ADMIN, ['api', 'GET', '/api/v1/nope'], { expect: 3 });
c(ADMIN, ['api', 'POST', '/api/v1/nope', '-f', 'a=b'], { expect: 1, note: 'osctrl 405 (text)' });
c(ADMIN, ['api', 'GET', '/error'], { expect: 1, note: 'osctrl 500 ❌ (text)' });
c(ADMIN, ['completion', 'bash'], { note: 'local' });
c(ADMIN, ['options'], { note: 'local' });
c(ADMIN, ['version'], { note: 'local' });

// osquery configuration (issue 22) and GitOps.
c(ADMIN, ['env', 'config', ENV]);
c(ADMIN, ['env', 'config', ENV, 'schedule', '-o', 'json']);
c(ADMIN, ['schedule', 'add', ENV, 'uptime_run', '--query', 'SELECT * FROM uptime', '--interval', '3600']);
c(ADMIN, ['schedule', 'list', ENV]);
c(ADMIN, ['schedule', 'show', ENV, 'uptime_run']);
c(ADMIN, ['schedule', 'edit', ENV, 'uptime_run', '--interval', '7200']);
c(ADMIN, () => ['diff', '-f', ctx.configFile], { expect: 1, note: 'exit 1: something differs' });
c(ADMIN, () => ['apply', '-f', ctx.configFile, '--dry-run']);
c(ADMIN, () => ['apply', '-f', ctx.configFile]);
c(ADMIN, () => ['diff', '-f', ctx.configFile], { note: 'nothing differs after apply' });
c(ADMIN, ['schedule', 'remove', ENV, 'uptime_run', '--yes']);
c(ADMIN, () => ['env', 'config', ENV, '--set', 'options', ctx.optionsFile], { note: 'back as it was' });
c('quinn', ['env', 'config', ENV], { expect: 5, note: 'env admins only (osctrl)' });

// Deleting, passwords, logout, limits: last.
c(ADMIN, ['nodes', 'delete', 'no-such-node', '--yes'], { expect: 3 });
c(ADMIN, () => ['nodes', 'delete', ctx.node3, '--yes'], {
  when: () => ctx.nodes >= 3,
  note: 'a real node (osctrl-tls keeps serving its agent from its cache: restart that agent with an empty database to enroll it again)',
});
c('carla', ['users', 'passwd', '--password-stdin'], {
  input: () => `not-${users.carla.password}\n${pw()}\n`,
  expect: 5,
  note: 'wrong current password: osctrl 403',
});
c('carla', ['users', 'passwd', '--password-stdin'], {
  input: () => `${users.carla.password}\n${(users.carla.next = pw())}\n`,
  note: 'own password; says the sessions stay valid',
  verify: has(/stays? valid|remains? valid|still valid/i, 'that sessions stay valid'),
});
c('carla', ['users', 'passwd', '--password-stdin'], {
  input: () => `${users.carla.next}\nshort\n`,
  expect: 2,
  note: 'too short: refused before any request',
  verify: (r, sent) => (sent.some((s) => s.method === 'POST') ? 'sent' : undefined),
});
c('carla', ['api', 'POST', '/api/v1/users/me/password', '-f', 'current_password=x', '-f', 'new_password=short'], {
  expect: 1,
  note: 'osctrl 400 (policy)',
});
c('bob', ['logout'], { note: 'session really ended: the token answers 401' });
c('bob', ['auth', 'status'], { expect: 4, note: 'after logout: not logged in' });
c('bob', ['api', 'GET', '/api/v1/users/me', '--server-flavor', 'osctrl'], {
  expect: 4,
  env: () => ({ FLEETCTL_TOKEN: ctx.bobToken, FLEETCTL_URL: URL_ }),
  note: 'the old token: osctrl 401',
});
c(ADMIN, ['settings', 'set', 'admin', 'inactive_hours', () => String(ctx.inactiveHours ?? 72)], { note: 'back as it was' });
c('eve', () => ['login', '--url', URL_, '--env', ENV, '--username', 'nosuchuser', '--password-stdin', '--insecure-storage'], {
  input: () => 'x',
  repeat: 30,
  until: 7,
  note: 'wrong logins until osctrl limits them (10 a minute): exit 7 with the wait',
  verify: has(/try again|retry|wait|rate/i, 'the wait'),
});
for (const u of ['erin', 'quinn', 'carla', 'bob']) c(ADMIN, ['users', 'remove', u, '--yes'], { note: 'clean-up' });

// ---------------------------------------------------------------------------------------------
const results = [];
const resolveArg = (a) => (typeof a === 'function' ? a() : a);
async function prepare() {
  // Leftovers of an earlier run (users and the tag) go first, through fleetctl too.
  await fleetctl(ADMIN, loginArgs(ADMIN), ADMIN_PASSWORD);
  for (const u of ['erin', 'quinn', 'carla', 'bob', 'dora']) await fleetctl(ADMIN, ['users', 'remove', u, '--yes']);
  await fleetctl(ADMIN, ['schedule', 'remove', ENV, 'uptime_run', '--yes']);
  await fleetctl(ADMIN, ['schedule', 'remove', ENV, 'log_probe', '--yes']);
  for (const e of ['lab', 'lab-b']) await fleetctl(ADMIN, ['env', 'delete', e, '--yes']);
  const nodes = JSON.parse((await fleetctl(ADMIN, ['nodes', 'list', '--env', ENV, '--all', '-o', 'json', '--sort', 'hostname'])).stdout);
  if (nodes.length < 2) throw new Error(`${ENV} needs at least two enrolled nodes (has ${nodes.length})`);
  ctx.node1 = nodes[0].hostname;
  ctx.node2 = nodes[1].hostname;
  ctx.node3 = nodes.at(-1).hostname; // deleted near the end (only when there are three or more)
  ctx.nodes = nodes.length;
  const s = JSON.parse((await fleetctl(ADMIN, ['settings', 'list', 'admin', '-o', 'json'])).stdout).find(
    (x) => x.name === 'inactive_hours',
  );
  ctx.inactiveHours = s?.integer;
  // A GitOps file: the environment's configuration with one option changed; its options as they are, to put back.
  const doc = JSON.parse((await fleetctl(ADMIN, ['env', 'config', ENV, '-o', 'json'])).stdout);
  ctx.optionsFile = join(work, 'options.json');
  writeFileSync(ctx.optionsFile, JSON.stringify(doc.spec.options ?? {}));
  const opts = { ...doc.spec.options };
  opts.distributed_denylist_duration = opts.distributed_denylist_duration === 86401 ? 86402 : 86401;
  ctx.configFile = join(work, `${ENV}-config.json`);
  delete doc.metadata.hash;
  writeFileSync(ctx.configFile, JSON.stringify({ ...doc, spec: { ...doc.spec, options: opts } }, null, 2));
  exchanges.length = 0;
}

/** Whether this build has the command (a run against an older fleetctl skips the newer checks). */
const has_ = new Map();
async function available(words) {
  const key = words.join(' ');
  // commander answers --help of an unknown verb with its group's help: the usage line names the verb or not.
  const usage = (await fleetctl(ADMIN, [...words, '--help'])).stdout.split('\n')[0] ?? '';
  if (!has_.has(key))
    has_.set(
      key,
      new RegExp(
        `^Usage: fleetctl ${words
          .slice(0, -1)
          .map((w) => `${w} `)
          .join('')}${words.at(-1)}[| ]`,
      ).test(usage),
    );
  return has_.get(key);
}

async function runCheck(i, ch) {
  current = i + 1;
  if (ch.when && !ch.when()) {
    console.log(`${String(i + 1).padStart(3)} skipped: ${ch.note}`);
    return;
  }
  if (ch.needs && !(await available(ch.needs))) {
    console.log(`${String(i + 1).padStart(3)} skipped: this fleetctl has no \`${ch.needs.join(' ')}\``);
    return;
  }
  if (ch.before) await ch.before();
  const args = (typeof ch.args === 'function' ? ch.args() : ch.args).map(resolveArg);
  const full = [...args];
  if (ch.as === 'bob' && args[0] === 'logout') {
    ctx.bobToken = (await fleetctl('bob', ['auth', 'token'])).stdout.trim();
  }
  const before = exchanges.length;
  let r;
  for (let k = 0; k < (ch.repeat ?? 1); k++) {
    const env = ch.env?.();
    r = env ? await fleetctlWith(ch.as, full, ch.input?.(), env) : await fleetctl(ch.as, full, ch.input?.(), ch.stopAfter);
    if (ch.until !== undefined && r.exitCode === ch.until) break;
  }
  const sent = exchanges.slice(before);
  const expect = ch.until ?? ch.expect ?? (ch.refused ? 8 : 0);
  let verdict;
  let why = '';
  const crash = /TypeError|ReferenceError|SyntaxError|\n\s+at .+:\d+:\d+/.test(r.stderr);
  if (crash) {
    verdict = 'crash';
    why = r.stderr.split('\n').find((l) => /Error/.test(l)) ?? 'stack trace';
  } else if (ch.refused) {
    verdict = r.exitCode === 8 && sent.length === 0 ? 'refused' : 'wrong';
    if (verdict === 'wrong') why = `exit ${r.exitCode}, ${sent.length} request(s)`;
  } else if (r.exitCode !== expect) {
    verdict = 'wrong';
    why = `exit ${r.exitCode}, expected ${expect}: ${(r.stderr.trim().split('\n')[0] ?? '').slice(0, 160)}`;
  } else {
    const bad = ch.verify ? safe(() => ch.verify(r, sent)) : undefined;
    verdict = bad ? 'wrong' : 'works';
    why = bad ?? '';
  }
  // A labelled check keeps its exchanges of the routes named (the last of each), beside the first of each kind.
  const [label, routes] = Array.isArray(ch.record) ? ch.record : [ch.record, /./];
  for (const x of sent) if (label && routes.test(`${x.method} ${routeOf(x.path)}`)) x.label = label;
  const shown = args.map((a) => (a === URL_ ? 'URL' : a.startsWith(work) ? a.slice(work.length + 1) : a));
  results.push({
    n: i + 1,
    as: ch.as,
    level: users[ch.as]?.level ?? 'unknown user',
    cmd: shown.join(' '),
    verdict,
    why,
    note: ch.note ?? '',
    exit: r.exitCode,
    sent: sent.map((s) => `${s.method} ${s.path}`),
  });
  const line = `${String(i + 1).padStart(3)} ${verdict.padEnd(7)} exit ${r.exitCode}  ${shown.join(' ')} (${ch.as})${why ? `: ${why}` : ''}`;
  console.log(line);
  if (process.env.OSCTRL_RUN_VERBOSE) console.log(r.stdout.slice(0, 2000), r.stderr.slice(0, 2000));
}
/** Waits (up to 2 minutes) until the node sent a result line of log_probe. */
async function logged(node) {
  for (let i = 0; i < 60; i++) {
    const r = await fleetctl(ADMIN, ['logs', '--node', node, '--type', 'result', '-q', 'log_probe', '--limit', '1', '-o', 'json']);
    if (r.exitCode === 0 && JSON.parse(r.stdout || '[]').length) return;
    await new Promise((done) => setTimeout(done, 2000));
  }
}
/** Waits (up to 2 minutes) until every node targeted by the query answered. */
async function answered(name) {
  for (let i = 0; i < 60; i++) {
    const q = JSON.parse((await fleetctl(ADMIN, ['query', 'show', name, '-o', 'json'])).stdout || '{}');
    if (q.expected && q.executions + q.errors >= q.expected) return;
    await new Promise((r) => setTimeout(r, 2000));
  }
}
function safe(f) {
  try {
    return f();
  } catch (e) {
    return `output not as expected (${e.message})`;
  }
}
function fleetctlWith(as, args, input, extra) {
  const env = {
    ...process.env,
    FLEETCTL_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'osctrl-run-env-')),
    FLEETCTL_PAGER: 'cat',
    DBUS_SESSION_BUS_ADDRESS: 'disabled:',
    NO_COLOR: '1',
    ...extra,
  };
  return new Promise((done) => {
    const p = execFile('node', [BIN, ...args], { env, cwd: work, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      done({ exitCode: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
    p.stdin.end(input ?? '');
  });
}

// ---------------------------------------------------------------------------------------------
// Scrubbing: every secret seen anywhere is replaced in every recorded text.
function secrets() {
  const found = new Map(); // value -> REDACTED-KIND
  const add = (v, kind) => {
    if (typeof v === 'string' && v.length >= 6 && !found.has(v)) found.set(v, `REDACTED-${kind}`);
  };
  const walk = (o, path) => {
    if (!o || typeof o !== 'object') return;
    for (const [k, v] of Object.entries(o)) {
      const kk = k.toLowerCase();
      if (
        [
          'token',
          'csrf_token',
          'secret',
          'node_key',
          'enroll_secret_path',
          'remove_secret_path',
          'password',
          'current_password',
          'new_password',
          'api_token',
          'csrftoken',
        ].includes(kk)
      )
        add(v, kk.toUpperCase());
      else if (kk === 'data' && /\/enroll\/secret$/.test(path)) add(v, 'SECRET');
      else walk(v, path);
    }
  };
  for (const x of exchanges) {
    for (const t of [x.request, x.body.toString('utf8')]) {
      try {
        walk(JSON.parse(t ?? 'null'), x.path);
      } catch {
        /* not JSON */
      }
    }
  }
  for (const u of Object.values(users)) add(u.password, 'PASSWORD');
  add(ctx.bobToken, 'TOKEN');
  return [...found.entries()].sort((a, b) => b[0].length - a[0].length);
}
const scrub = (text, list) => {
  let t = text;
  for (const [v, r] of list) t = t.split(v).join(r);
  // Passwords in request bodies, whatever their length (a wrong one too).
  t = t.replace(/"(password|current_password|new_password)":"(?:[^"\\]|\\.)*"/g, (m, k) => `"${k}":"REDACTED-${k.toUpperCase()}"`);
  return t.replace(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g, 'REDACTED-TOKEN');
};
/** The route of a path: names of queries, carves, nodes, users and env UUIDs as placeholders. */
function routeOf(path) {
  return path
    .replace(/query_[0-9a-f]{32}/g, '{query}')
    .replace(/carve_[0-9a-f]{32}/g, '{carve}')
    .replace(/\/node\/[^/]+$/, '/node/{node}')
    .replace(/\/users\/(?!me\b)[^/]+\/(add|edit|remove)$/, '/users/{user}/$1')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '{uuid}');
}
function writeRecording(file) {
  const list = secrets();
  const out = {};
  for (const x of exchanges) {
    // GET permissions: one per user (the stand-in's users); a POST's user is any.
    const route =
      x.method === 'POST' ? routeOf(x.path).replace(/\/users\/[^/{]+\/permissions$/, '/users/{user}/permissions') : routeOf(x.path);
    let key = `${x.method} ${route} ${x.status}`;
    if (x.label && out[key])
      key = `${key} (${x.label})`; // the last of a labelled kind (answers complete)
    else if (out[key]) continue; // else the first of each kind
    const binary = /octet-stream|x-tar/.test(x.content_type);
    out[key] = {
      method: x.method,
      route,
      path: scrub(x.path, list),
      query: scrub(x.query, list),
      check: x.check,
      request: x.request === null ? null : scrub(x.request, list),
      status: x.status,
      content_type: x.content_type,
      ...(x.retry_after ? { retry_after: x.retry_after } : {}),
      ...(x.allow ? { allow: x.allow } : {}),
      ...(binary ? { body_base64: x.body.toString('base64') } : { body: scrub(x.body.toString('utf8'), list) }),
    };
  }
  const sorted = Object.fromEntries(
    Object.keys(out)
      .sort()
      .map((k) => [k, out[k]]),
  );
  const about =
    `Exchanges with a real osctrl-api, recorded by scripts/osctrl-run.mjs while it drove the built fleetctl (docs/osctrl.md says how). ` +
    'Bodies are the bytes that came off the wire (key order kept), as text; secrets (tokens, CSRF tokens, node keys, enroll secrets and secret paths, passwords) replaced by REDACTED-*. ' +
    'One exchange per method, route and status (the first), and the ones a check labelled (KEY (label)).';
  writeFileSync(file, `${JSON.stringify({ _about: about, recorded_at: new Date().toISOString(), exchanges: sorted }, null, 1)}\n`);
  console.log(`recorded ${Object.keys(sorted).length} exchanges to ${file}`);
}

function table() {
  const count = (v) => results.filter((r) => r.verdict === v).length;
  const esc = (s) => s.replace(/\|/g, '\\|');
  const rows = results.map((r) => {
    const uniq = [...new Set(r.sent)].sort();
    const what = uniq.length ? `${r.sent.length}: ${uniq.slice(0, 3).join(', ')}${uniq.length > 3 ? ' …' : ''}` : 'none';
    const result = r.verdict + (r.note ? ` (${r.note})` : '') + (r.why ? `: ${r.why}` : '');
    return `| ${r.n} | \`${esc(r.cmd)}\` (${r.level}) | ${esc(result)} | ${r.exit} | ${esc(what.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '{uuid}'))} |`;
  });
  const summary = `**${results.length} checks: ${count('works')} work, ${count('refused')} refused before any request (exit 8), ${count('wrong')} wrong, ${count('crash')} crashes.**`;
  return {
    text: ['| # | command (as) | result | exit | what reached osctrl |', '|---|---|---|---|---|', ...rows, '', summary].join('\n'),
    summary,
  };
}

try {
  await prepare();
  const only = opt.only ? new Set(opt.only.split(',').map(Number)) : undefined;
  for (const [i, ch] of checks.entries()) if (!only || only.has(i + 1)) await runCheck(i, ch);
} finally {
  proxy.close();
}
const { text, summary } = table();
console.log(`\n${summary}`);
if (opt.record) writeRecording(resolve(opt.record));
if (opt.doc) {
  const file = resolve(opt.doc);
  const doc = readFileSync(file, 'utf8');
  const begin = '<!-- osctrl-run: begin (scripts/osctrl-run.mjs writes this table) -->';
  const end = '<!-- osctrl-run: end -->';
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${file} has no ${begin} … ${end} markers`);
  const stamp = `Run ${new Date().toISOString().slice(0, 10)} against ${process.env.OSCTRL_VERSION_NOTE ?? 'osctrl-api'}, fleetctl ${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version} (\`node scripts/osctrl-run.mjs --doc docs/osctrl.md\`).`;
  writeFileSync(file, `${doc.slice(0, a + begin.length)}\n${stamp}\n\n${text}\n${doc.slice(b)}`);
  console.log(`table written to ${file}`);
}
for (const d of [...dirs.values(), work]) if (existsSync(d)) rmSync(d, { recursive: true, force: true });
process.exit(results.some((r) => r.verdict === 'wrong' || r.verdict === 'crash') ? 1 : 0);
