// The enroll one-liner (issue 26 item 7): `curl -s URL | sh` exited 0 and did nothing when curl
// could not verify the agent listener (a private CA not yet on the host). The script's header
// now says `curl -fsS` (an HTTP error fails, and curl says why), and, where the environment has a
// certificate, a variant with `--cacert`. Run here with the real curl against the real listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { startAgentServer, type AgentServer } from '../helpers/osqueryd.js';

describe('the enroll one-liner with the real curl', () => {
  let srv: AgentServer;
  let script: string;

  beforeAll(async () => {
    srv = await startAgentServer();
    const r = await srv.cli.run(['enroll', 'show', 'prod', 'enroll.sh']);
    expect(r.exitCode, r.stderr).toBe(0);
    script = r.stdout;
  });

  afterAll(async () => {
    await srv?.stop();
  });

  const oneLiner = () => /^# One-liner \(where the environment's TLS service serves this script\): (curl .*) \| sh$/m.exec(script)?.[1];
  const withCa = () =>
    /^# Where this host does not trust the listener's certificate yet: save it \(fleetctl enroll show prod cert > fleetctl\.crt\), then: (curl .*) \| sh$/m.exec(
      script,
    )?.[1];
  const argv = (cmd: string) => cmd.split(' ').slice(1);

  it('the one-liner is curl -fsS: against an untrusted listener curl fails and says why', async () => {
    const cmd = oneLiner();
    expect(cmd).toMatch(/^curl -fsS https:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+\/[0-9a-f]+\/enroll\.sh$/);
    const r = await execa('curl', argv(cmd!), { reject: false, cwd: srv.dir });
    expect(r.exitCode).toBe(60); // curl: peer certificate cannot be authenticated
    expect(r.stderr).toMatch(/curl: \(60\)/);
    expect(r.stdout).toBe('');
  });

  it('the --cacert variant, with the certificate from fleetctl enroll show prod cert, downloads the script', async () => {
    const cert = await srv.cli.run(['enroll', 'show', 'prod', 'cert']);
    writeFileSync(join(srv.dir, 'fleetctl.crt'), cert.stdout);
    const cmd = withCa();
    expect(cmd).toBe(`curl -fsS --cacert fleetctl.crt ${argv(oneLiner()!)[1]}`);
    const r = await execa('curl', argv(cmd!), { reject: false, cwd: srv.dir });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trimEnd()).toBe(script.trimEnd()); // execa strips curl's final newline
  });

  it('a wrong secret path fails the one-liner (curl -f: 404 is an error, not a page for sh)', async () => {
    const url = argv(oneLiner()!)[1].replace(/\/[0-9a-f]+\/enroll\.sh$/, '/0000/enroll.sh');
    const r = await execa('curl', ['-fsS', '--cacert', 'fleetctl.crt', url], { reject: false, cwd: srv.dir });
    expect(r.exitCode).toBe(22);
    expect(r.stdout).toBe('');
  });
});
