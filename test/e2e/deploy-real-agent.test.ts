// Issue 27, point 7: the README's "Running it in production", top to bottom, with the real osquery
// agent. The README's blocks (marked <!-- deploy:NAME -->) run in bash as written, with these
// differences, each because a test must not take the machine over:
// - the name is fleet.test (one line added to /etc/hosts when missing), ports are free ones, and
//   /var/lib/fleetctl, /etc/fleetctl and /var/backups are directories of the test;
// - there is no systemd: `systemctl start|stop|reload fleetctl` run the unit's ExecStart (read from
//   deploy/systemd/fleetctl.service) as a process of the test, stop it (SIGTERM) and send it SIGHUP
//   (returning once the server logged the reload: a loaded machine may take seconds to get there);
//   `journalctl` prints its stderr; the install block (a system user, /etc/systemd) is done by hand
//   for the test's directories, without the user (chown is a no-op);
// - the host: `enroll.sh` as printed runs as root in a mount and UTS namespace of its own, over an
//   overlay of /etc (what it writes to /etc/osquery stays in the test's directory), with osqueryd
//   on its PATH and a `systemctl` that starts osqueryd from the flags file the script wrote;
// - the environment's intervals are shortened before the script is printed (a test must not wait
//   minutes), and its detail refresh set to its minimum, a minute.
import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BIN } from '../helpers/cli.js';
import { OSQUERYD, describeRealAgent } from '../helpers/osqueryd.js';
import { presentedChain } from '../helpers/pki.js';

const REPO = resolve(import.meta.dirname, '../..');
const ADMIN_PW = 'deploy-test-password-1';

/** The README's blocks of "Running it in production", by their marker. */
function readmeBlocks(): Map<string, string> {
  const text = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('## Running it in production'), text.indexOf('## Security notes'));
  const blocks = new Map<string, string>();
  for (const m of section.matchAll(/<!-- deploy:([a-z]+) -->\n```sh\n([\s\S]*?)```/g)) blocks.set(m[1], m[2]);
  return blocks;
}

/** The unit's ExecStart, continuation lines joined. */
function unitExecStart(): string {
  const unit = readFileSync(join(REPO, 'deploy/systemd/fleetctl.service'), 'utf8');
  return /^ExecStart=((?:.*\\\n)*.*)$/m.exec(unit)![1].replace(/\\\n\s*/g, ' ');
}

const freePort = () =>
  new Promise<number>((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });

const sh = (q: string) => `'${q.replace(/'/g, `'\\''`)}'`;

/** Whether a process of that id still runs (signal 0 only asks). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Why this cannot run here (it needs root for /etc/hosts, namespaces and mounts), or undefined. */
function cannot(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (an /etc/hosts line, mount namespaces)';
  for (const tool of ['unshare', 'nsenter', 'setsid', 'mount', 'openssl', 'bash']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `needs ${tool}`;
  }
  const hosts = readFileSync('/etc/hosts', 'utf8');
  const line = hosts.split('\n').find((l) => /(^|\s)fleet\.test(\s|$)/.test(l.replace(/#.*/, '')));
  if (line && !/^\s*127\.0\.0\.1\s/.test(line)) return `/etc/hosts maps fleet.test elsewhere (${line.trim()})`;
  return undefined;
}

describeRealAgent("the README's production section, with the real osquery agent behind a private CA", () => {
  const why = cannot();
  let t: string;
  let apiPort: number;
  let agentPort: number;
  let blocks: Map<string, string>;
  let holder: number | undefined;
  let hostId = '';

  /** A README block (or any script) in bash, with the test's stand-ins for fleetctl on PATH, systemctl, journalctl and chown. */
  const run = (script: string, o: { allowFail?: boolean } = {}) => {
    const body = script
      .replaceAll('fleet.example.com', 'fleet.test')
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${apiPort}`)
      .replaceAll(':8443', `:${agentPort}`)
      .replaceAll('/var/lib/fleetctl', join(t, 'var-lib'))
      .replaceAll('/etc/fleetctl', join(t, 'etc'))
      .replaceAll('/var/backups', join(t, 'backups'));
    const r = spawnSync('bash', ['-c', `set -euo pipefail\nsource ${sh(join(t, 'preamble.sh'))}\n${body}`], {
      cwd: join(t, 'work'),
      encoding: 'utf8',
      env: { ...process.env, FLEETCTL_CONFIG_DIR: join(t, 'cfg'), ADMIN_PW, FLEETCTL_DB: '' },
      timeout: 300_000,
    });
    if (!o.allowFail && r.status !== 0) {
      const how = r.status === null ? `${r.signal ?? 'killed'}: still running at spawnSync's timeout` : r.status;
      throw new Error(
        `script failed (${how}):\n${body}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n--- server.log, its end\n${serverLog().split('\n').slice(-30).join('\n')}`,
      );
    }
    return r;
  };
  const fleetctl = (...args: string[]) => run(`fleetctl ${args.map(sh).join(' ')}`);
  /** A command on the host: in the namespace of the enrolled agent. */
  const onHost = (cmd: string) => execFileSync('nsenter', ['-t', String(holder), '-m', '-u', 'sh', '-c', cmd], { encoding: 'utf8' });
  const serverLog = () => (existsSync(join(t, 'server.log')) ? readFileSync(join(t, 'server.log'), 'utf8') : '');
  /** Polls until `f` gives a value. No clock of its own: a hang ends in the test's timeout, which then shows what was waited for and both logs. */
  const eventually = async <T>(what: string, f: () => T | undefined): Promise<T> => {
    let waiting = true;
    try {
      onTestFailed(() => {
        if (waiting)
          console.error(
            `was waiting for ${what}\n--- server\n${serverLog().slice(-3000)}\n--- osqueryd\n${existsSync(join(t, 'osqueryd.log')) ? readFileSync(join(t, 'osqueryd.log'), 'utf8').slice(-3000) : ''}`,
          );
      });
    } catch {
      // in a hook: no test to report to
    }
    try {
      for (;;) {
        const v = f();
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, 1000));
      }
    } finally {
      waiting = false;
    }
  };
  const nodeJson = () => {
    const r = run(`fleetctl nodes list --all -o json`, { allowFail: true });
    return r.status === 0
      ? (JSON.parse(r.stdout) as { uuid: string; hostname: string; config_hash: string; osquery_version: string; last_seen: string }[])
      : [];
  };

  beforeAll(async () => {
    if (why) {
      if (process.env.CI) throw new Error(`the deployment test cannot run: ${why}`);
      return;
    }
    // The name agents use: one line, added when missing (never a line changed or removed).
    if (!/^\s*127\.0\.0\.1\s+(.*\s)?fleet\.test(\s|$)/m.test(readFileSync('/etc/hosts', 'utf8')))
      appendFileSync('/etc/hosts', '127.0.0.1 fleet.test\n');
    t = mkdtempSync(join(tmpdir(), 'deploy-'));
    for (const d of ['work', 'cfg', 'var-lib', 'etc', 'backups', 'host/bin', 'host/upper', 'host/ovl-work', 'host/db', 'host/logs'])
      mkdirSync(join(t, d), { recursive: true, mode: 0o700 });
    apiPort = await freePort();
    agentPort = await freePort();
    blocks = readmeBlocks();
    // The server as systemd would run it: the unit's ExecStart and environment.
    const exec = unitExecStart()
      .replace('/usr/bin/fleetctl', `node ${BIN}`)
      .replaceAll('fleet.example.com', 'fleet.test')
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${apiPort}`)
      .replaceAll(':8443', `:${agentPort}`)
      .replaceAll('/var/lib/fleetctl', join(t, 'var-lib'))
      .replaceAll('/etc/fleetctl', join(t, 'etc'));
    writeFileSync(
      join(t, 'preamble.sh'),
      [
        `fleetctl() { node ${sh(BIN)} "$@"; }`,
        'chown() { :; }',
        `journalctl() { cat ${sh(join(t, 'server.log'))}; }`,
        'systemctl() {',
        '  case "$1 ${2:-}" in',
        // EnvironmentFile=-/etc/fleetctl/fleetctl.env and Environment=MALLOC_ARENA_MAX=2, then ExecStart, in the background.
        `    "start fleetctl") ( set -a; [ -f ${sh(join(t, 'etc/fleetctl.env'))} ] && . ${sh(join(t, 'etc/fleetctl.env'))}; MALLOC_ARENA_MAX=2 setsid ${exec} >>${sh(join(t, 'server.out'))} 2>>${sh(join(t, 'server.log'))} & echo $! > ${sh(join(t, 'server.pid'))} )`,
        `      for i in $(seq 1 1800); do node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' http://127.0.0.1:${apiPort}/healthz && return 0; sleep 0.1; done; echo "fleetctl did not start" >&2; return 1 ;;`,
        `    "stop fleetctl") pid=$(cat ${sh(join(t, 'server.pid'))}); kill -TERM "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done ;;`,
        // Returns once the server logged the reload (done or refused), not after a guess of time.
        // A server the signal ended logs nothing more: that fails at once (the log is in run's error).
        `    "reload fleetctl") pid=$(cat ${sh(join(t, 'server.pid'))}); n=$(grep -c '"event":"reload"' ${sh(join(t, 'server.log'))} || true); kill -HUP "$pid"`,
        `      until [ "$(grep -c '"event":"reload"' ${sh(join(t, 'server.log'))} || true)" -gt "$n" ]; do`,
        '        kill -0 "$pid" 2>/dev/null || { echo "systemctl reload: fleetctl (pid $pid) is gone, and logged no reload" >&2; return 1; }',
        '        sleep 0.1',
        '      done ;;',
        '    "daemon-reload ") ;;',
        '    *) echo "systemctl $*: not in this test" >&2; return 1 ;;',
        '  esac',
        '}',
        '',
      ].join('\n'),
    );
    // The host's tools: osqueryd on PATH (enroll.sh looks for it), and a systemctl that starts it
    // from the flags file enroll.sh wrote, as osquery's own service unit would.
    symlinkSync(OSQUERYD!, join(t, 'host/bin/osqueryd'));
    writeFileSync(
      join(t, 'host/bin/systemctl'),
      [
        '#!/bin/sh',
        `echo "systemctl $*" >> ${sh(join(t, 'host/calls.log'))}`,
        'case "$1" in',
        '  enable) exit 0 ;;',
        `  restart|start) [ -f ${sh(join(t, 'host/osqueryd.pid'))} ] && kill "$(cat ${sh(join(t, 'host/osqueryd.pid'))})" 2>/dev/null; sleep 1`,
        `    setsid ${sh(OSQUERYD!)} --flagfile=/etc/osquery/osquery.flags --database_path=${sh(join(t, 'host/db'))} --pidfile=${sh(join(t, 'host/osqueryd.pid'))} --extensions_socket=${sh(join(t, 'host/em.sock'))} --logger_path=${sh(join(t, 'host/logs'))} --disable_watchdog --verbose >>${sh(join(t, 'osqueryd.log'))} 2>&1 &`,
        '    exit 0 ;;',
        '  *) exit 1 ;;',
        'esac',
        '',
      ].join('\n'),
    );
    chmodSync(join(t, 'host/bin/systemctl'), 0o755);
  });

  afterAll(async () => {
    if (!t) return;
    const pids: number[] = [];
    for (const f of ['host/osqueryd.pid', 'server.pid']) {
      try {
        const pid = Number(readFileSync(join(t, f), 'utf8').trim());
        process.kill(pid, 'SIGTERM');
        pids.push(pid);
      } catch {
        /* not running */
      }
    }
    if (holder) {
      try {
        process.kill(holder, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    // The server drains (its grace) before it exits: its directory goes once it has.
    for (const pid of pids) while (alive(pid)) await new Promise((r) => setTimeout(r, 100));
    rmSync(t, { recursive: true, force: true });
  });

  // Each step is skipped only when cannot() says this machine lacks what it needs (root for an
  // /etc/hosts line and mount namespaces, unshare, nsenter, openssl...); CI runs as root with them.
  it.skipIf(Boolean(why))('1. a private CA: root, intermediate, and a certificate for the agent door (the pki block)', () => {
    run(blocks.get('pki')!);
    for (const f of ['root.pem', 'int.pem', 'agent.pem', 'agent-chain.pem', 'agent.key'])
      expect(existsSync(join(t, 'work/pki', f)), f).toBe(true);
  });

  it.skipIf(Boolean(why))("2. the service: the install block's files, the unit's ExecStart, --log", async () => {
    expect(blocks.get('install')).toContain('systemctl daemon-reload && systemctl enable --now fleetctl');
    // What the install block does, in the test's directories (no system user here).
    for (const f of ['agent-chain.pem', 'agent.key'])
      writeFileSync(join(t, 'etc', f), readFileSync(join(t, 'work/pki', f)), { mode: 0o640 });
    writeFileSync(join(t, 'etc/agent-ca.pem'), readFileSync(join(t, 'work/pki/root.pem')), { mode: 0o640 });
    writeFileSync(join(t, 'etc/fleetctl.env'), `FLEETCTL_ADMIN_PASSWORD=${ADMIN_PW}\n`, { mode: 0o600 });
    run('systemctl daemon-reload && systemctl start fleetctl');
    await eventually('the start event', () => (/"event":"start"/.test(serverLog()) ? true : undefined));
    const events = serverLog()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; agent_host?: string });
    expect(events.find((e) => e.event === 'start')).toMatchObject({ agent_host: `fleet.test:${agentPort}` });
  });

  it.skipIf(Boolean(why))('3. enrolling: login, version, env show, and the environment handing out the name and the root', () => {
    const r = run(blocks.get('enroll')!);
    expect(r.stdout).toMatch(/^server: fleetctl \S+ at http:\/\/127\.0\.0\.1:\d+ \(schema \d+_\w+, sqlite, node /m);
    expect(r.stdout).toMatch(new RegExp(`^hostname\\tfleet\\.test:${agentPort}$`, 'm'));
    expect(r.stdout).toMatch(/^enrollment\topen until closed$/m);
    // Shorter intervals for the test, then the script printed again: its flags as printed are used unchanged.
    fleetctl('env', 'intervals', 'prod', '--config', '10', '--log', '5', '--query', '5');
    fleetctl('env', 'edit', 'prod', '--detail-refresh', '1m');
    run('fleetctl enroll show prod enroll.sh > enroll.sh');
    const script = readFileSync(join(t, 'work/enroll.sh'), 'utf8');
    expect(script).toContain(readFileSync(join(t, 'work/pki/root.pem'), 'utf8').trim());
    expect(script).toContain(`--tls_hostname=fleet.test:${agentPort}`);
  });

  it.skipIf(Boolean(why))(
    '4. a host runs enroll.sh as printed, and the real osqueryd enrolls through the name, trusting the root',
    async () => {
      // The host: its own mount and UTS namespaces (a hostname of its own), /etc as an overlay
      // (enroll.sh's /etc/osquery lands in the test's directory), osqueryd on PATH. The shell then
      // stays, holding the namespaces, so the test can rename the host later.
      const setup = [
        `mount -t overlay overlay -o lowerdir=/etc,upperdir=${sh(join(t, 'host/upper'))},workdir=${sh(join(t, 'host/ovl-work'))} /etc`,
        'hostname web-before',
        `PATH=${sh(join(t, 'host/bin'))}:$PATH sh ${sh(join(t, 'work/enroll.sh'))} > ${sh(join(t, 'host/enroll.out'))} 2>&1`,
        `echo done > ${sh(join(t, 'host/enrolled'))}`,
        'exec sleep 100000',
      ].join(' && ');
      const p = execFileSync('sh', ['-c', `setsid unshare -mu sh -c ${sh(setup)} > /dev/null 2>&1 & echo $!`], { encoding: 'utf8' });
      holder = Number(p.trim());
      await eventually('enroll.sh to finish', () => (existsSync(join(t, 'host/enrolled')) ? true : undefined));
      expect(readFileSync(join(t, 'host/calls.log'), 'utf8')).toBe('systemctl enable osqueryd\nsystemctl restart osqueryd\n');
      expect(readFileSync(join(t, 'host/enroll.out'), 'utf8')).toContain('done: this node enrolls in prod at its next check-in');
      // The flags osqueryd runs with are the ones printed, unchanged.
      expect(readFileSync(join(t, 'host/upper/osquery/osquery.flags'), 'utf8')).toBe(run('fleetctl enroll show prod flagsLinux').stdout);
      const n = await eventually('the host to enroll and fetch its configuration', () =>
        nodeJson().find((x) => x.hostname === 'web-before' && x.config_hash !== ''),
      );
      hostId = n.uuid;
      expect(n.osquery_version).toMatch(/^5\./);
      expect(run(blocks.get('check')!).stdout).toContain('web-before');
      expect(readFileSync(join(t, 'osqueryd.log'), 'utf8')).not.toMatch(/certificate verify failed/);
    },
  );

  it.skipIf(Boolean(why))('5. a live query is answered; a detail refresh brings the renamed host under its new name', async () => {
    const q = run(`fleetctl query run "SELECT hostname FROM system_info" --target ${hostId} --exit --wait 3m -o json`);
    expect(JSON.parse(q.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ rows: [{ hostname: 'web-before' }] })]));
    onHost('hostname web-after');
    const renamed = await eventually('the detail refresh to report the new hostname', () =>
      nodeJson().find((x) => x.uuid === hostId && x.hostname === 'web-after'),
    );
    expect(renamed.uuid).toBe(hostId);
    expect(run('fleetctl nodes show web-after -o json').stdout).toContain(hostId);
  });

  it.skipIf(Boolean(why))('6. a backup of the live database, restored; the agent goes on with its key', async () => {
    run(blocks.get('backup')!);
    run(blocks.get('restore')!);
    expect(serverLog()).toMatch(/"event":"shutdown"/);
    const before = nodeJson().find((x) => x.uuid === hostId)!;
    await eventually('the agent to check in with the restored server', () => {
      const n = nodeJson().find((x) => x.uuid === hostId);
      return n && n.last_seen > before.last_seen ? n : undefined;
    });
    expect(readFileSync(join(t, 'osqueryd.log'), 'utf8')).not.toMatch(/node_invalid.*true|Failed to enroll/i);
  });

  it.skipIf(Boolean(why))('7. an upgrade step: backup, migrate --dry-run, migrate, start', () => {
    const r = run(blocks.get('upgrade')!);
    expect(r.stdout).toMatch(/The schema is up to date \(\d+_\w+\): nothing to apply\./);
    expect(existsSync(join(t, 'backups/fleetctl/fleet-before-upgrade.db'))).toBe(true);
  });

  it.skipIf(Boolean(why))('8. a renewed certificate: reload picks it up; the agent, trusting the root, goes on', async () => {
    const before = await presentedChain('127.0.0.1', agentPort, 'fleet.test');
    const r = run(blocks.get('renew')!);
    const after = await presentedChain('127.0.0.1', agentPort, 'fleet.test');
    expect(after.serials[0]).not.toBe(before.serials[0]);
    // The reload line names the certificate now served. Each of the unit's worker processes logs
    // one; a worker still starting when the files were replaced (step 7 started the server just
    // before) read the new ones at its start and says "unchanged" with the new serial.
    const line = new RegExp(
      `"event":"reload".*agent certificate (reloaded|unchanged) \\(serial ${after.serials[0]},.*trust anchor unchanged`,
    );
    expect(r.stdout).toMatch(line);
    // The agent opens new connections to the renewed certificate: restarted, it checks in again with its key.
    onHost(`PATH=${sh(join(t, 'host/bin'))}:$PATH systemctl restart osqueryd`);
    const mark = nodeJson().find((x) => x.uuid === hostId)!.last_seen;
    await eventually('the restarted agent to check in over the renewed certificate', () => {
      const n = nodeJson().find((x) => x.uuid === hostId);
      return n && n.last_seen > mark ? n : undefined;
    });
    const q = run(`fleetctl query run "SELECT hostname FROM system_info" --target ${hostId} --exit --wait 3m -o json`);
    expect(JSON.parse(q.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ rows: [{ hostname: 'web-after' }] })]));
    expect(readFileSync(join(t, 'osqueryd.log'), 'utf8')).not.toMatch(/certificate verify failed/);
  });
});
