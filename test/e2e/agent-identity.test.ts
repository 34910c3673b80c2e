// Issue 27, points 1 and 2: the agent door's public identity. The built `fleetctl server` behind
// a name (--agent-url) with a private root -> intermediate -> leaf PKI made by openssl: the full
// chain served, the root handed to agents, a renewal picked up by SIGHUP, refusals in one line.
// The real osquery agent against the same set-up is test/e2e/deploy-real-agent.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Cli, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { makePki, presentedChain, selfSignedCert, type Pki } from '../helpers/pki.js';
import { hostDetails, parseFlags } from '../helpers/osquery-agent.js';

const PASSWORD = 'prod-test-pass-1';
let dir: string;
let pki: Pki;
const clis: Cli[] = [];
const servers: ServerProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-identity-'));
  pki = makePki(dir);
});
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const c of clis) c.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const newCli = () => {
  const c = new Cli();
  clis.push(c);
  return c;
};

/** Waits until the server's output matches, returns the match (the test's timeout ends a hang). */
const waitFor = (s: ServerProcess, re: RegExp, what: string): Promise<RegExpExecArray> => s.waitFor(re, what);

async function start(args: string[]): Promise<{ s: ServerProcess; agentPort: number }> {
  const s = await startServerProcess(['--admin-password-stdin', ...args], { input: PASSWORD });
  servers.push(s);
  const m = await waitFor(s, /Agent API \(osquery TLS\) listening on https:\/\/[^:]+:(\d+)/, 'the agent listener');
  return { s, agentPort: Number(m[1]) };
}

/** An osquery enroll over TLS to 127.0.0.1 under the name `servername`, trusting only `ca`. */
function enrollOver(port: number, servername: string, ca: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        servername,
        ca,
        headers: { 'content-type': 'application/json', 'content-length': data.length },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.once('error', reject);
    req.end(data);
  });
}

describe('a server behind a name, with a private CA', () => {
  let s: ServerProcess;
  let agentPort: number;
  let cli: Cli;
  const certFile = () => join(dir, 'agent.pem');
  const keyFile = () => join(dir, 'agent.key');
  const caFile = () => join(dir, 'agent-ca.pem');

  beforeAll(async () => {
    const leaf = pki.leaf('leaf1', ['fleet.test']);
    // As an operator keeps them: the leaf alone, the intermediate and root in the CA file.
    copyFileSync(leaf.certFile, certFile());
    copyFileSync(leaf.keyFile, keyFile());
    writeFileSync(caFile(), readFileSync(pki.intFile, 'utf8') + pki.rootPem);
    ({ s, agentPort } = await start([
      '--db',
      join(dir, 'fleet.db'),
      '--create-env',
      'prod',
      '--agent-listen',
      '127.0.0.1:0',
      '--agent-url',
      'https://fleet.test:8443',
      '--agent-tls-cert',
      certFile(),
      '--agent-tls-key',
      keyFile(),
      '--agent-ca',
      caFile(),
    ]));
    cli = newCli();
    await cli.login(s.url, 'admin', 'prod', PASSWORD);
  });

  it('says where agents connect and what they trust; serves the leaf and the intermediate', async () => {
    expect(s.output()).toContain(
      'Agents connect to fleet.test:8443 (--tls_hostname) and trust the root CN=fleetctl test root CA (--agent-ca)',
    );
    const chain = await presentedChain('127.0.0.1', agentPort, 'fleet.test');
    expect(chain.subjects).toEqual(['fleet.test', 'fleetctl test intermediate CA']);
  });

  it('hands agents the root and the public name: cert, flags and enroll.sh', async () => {
    const cert = await cli.run(['enroll', 'show', 'prod', 'cert']);
    expect(cert.stdout).toBe(pki.rootPem);
    const flags = (await cli.run(['enroll', 'show', 'prod', 'flagsLinux'])).stdout;
    expect(flags).toContain('--tls_hostname=fleet.test:8443\n');
    expect(flags).toContain('--tls_server_certs=/etc/osquery/certs/fleetctl.crt\n');
    const script = (await cli.run(['enroll', 'show', 'prod', 'enroll.sh'])).stdout;
    expect(script).toContain(pki.rootPem.trim());
    expect(script).toContain("TLS_HOSTNAME='fleet.test:8443'");
  });

  it('an agent trusting only that root enrolls through the name', async () => {
    const flags = parseFlags((await cli.run(['enroll', 'show', 'prod', 'flags'])).stdout);
    const secret = (await cli.run(['enroll', 'show', 'prod', 'secret'])).stdout.trim();
    const id = randomUUID();
    const r = await enrollOver(agentPort, 'fleet.test', pki.rootPem, flags.endpoint.enroll, {
      enroll_secret: secret,
      host_identifier: id,
      host_details: hostDetails(id, 'web-1'),
    });
    expect(r).toMatchObject({ status: 200, body: { node_invalid: false } });
  });

  it('SIGHUP picks up a renewed certificate; the anchor handed out stays the root', async () => {
    const renewed = pki.leaf('leaf2', ['fleet.test']);
    copyFileSync(renewed.certFile, certFile());
    copyFileSync(renewed.keyFile, keyFile());
    s.proc.kill('SIGHUP');
    await waitFor(
      s,
      new RegExp(`SIGHUP: agent certificate reloaded \\(serial ${renewed.serial}, valid until [^)]+\\); trust anchor unchanged`, 'i'),
      'the reload line',
    );
    const chain = await presentedChain('127.0.0.1', agentPort, 'fleet.test');
    expect(chain.serials[0]).toBe(renewed.serial);
    expect((await cli.run(['enroll', 'show', 'prod', 'cert'])).stdout).toBe(pki.rootPem);
  });

  it('a renewal that does not fit (the wrong key) is refused in one line; the current certificate stays', async () => {
    const before = (await presentedChain('127.0.0.1', agentPort, 'fleet.test')).serials[0];
    const other = pki.leaf('leaf3', ['fleet.test']);
    copyFileSync(other.certFile, certFile()); // the key file is still leaf2's
    s.proc.kill('SIGHUP');
    await waitFor(
      s,
      /SIGHUP: the agent certificate was not reloaded, the current one stays in use: --agent-tls-key \S+ is not the key of the first certificate/,
      'the refusal',
    );
    expect((await presentedChain('127.0.0.1', agentPort, 'fleet.test')).serials[0]).toBe(before);
    copyFileSync(other.keyFile, keyFile());
  });

  it('a new CA: the environments that follow the server hand out the new root; one with its own certificate keeps it', async () => {
    expect((await cli.run(['env', 'create', 'pinned'])).exitCode).toBe(0);
    const own = join(dir, 'own.pem');
    writeFileSync(own, readFileSync(selfSignedCert(dir, 'own', ['own.example']).certFile, 'utf8'));
    expect((await cli.run(['enroll', 'update', 'pinned', '--certificate', own])).exitCode).toBe(0);
    const pki2 = makePki(mkdtempSync(join(dir, 'ca2-')), { rootName: 'fleetctl second root CA' });
    const leaf = pki2.leaf('leaf', ['fleet.test']);
    copyFileSync(leaf.chainFile, certFile());
    copyFileSync(leaf.keyFile, keyFile());
    writeFileSync(caFile(), pki2.rootPem);
    s.proc.kill('SIGHUP');
    await waitFor(s, /trust anchor changed: 1 environment\(s\) now hand it out/, 'the anchor change');
    expect((await cli.run(['enroll', 'show', 'prod', 'cert'])).stdout).toBe(pki2.rootPem);
    expect((await cli.run(['enroll', 'show', 'pinned', 'cert'])).stdout).toBe(readFileSync(own, 'utf8'));
    const env = JSON.parse((await cli.run(['env', 'show', 'pinned', '-o', 'json'])).stdout);
    expect(env).toMatchObject({ certificate_pinned: true, hostname_pinned: false, hostname: 'fleet.test:8443' });
    // An empty certificate: the environment follows the server's anchor again.
    writeFileSync(join(dir, 'empty.pem'), '');
    expect((await cli.run(['enroll', 'update', 'pinned', '--certificate', join(dir, 'empty.pem')])).exitCode).toBe(0);
    expect((await cli.run(['enroll', 'show', 'pinned', 'cert'])).stdout).toBe(pki2.rootPem);
    expect(JSON.parse((await cli.run(['env', 'show', 'pinned', '-o', 'json'])).stdout).certificate_pinned).toBe(false);
  });
});

describe('refusals and warnings at start, in one line', () => {
  it('an agent listener on every address without --agent-url: exit 2, saying what to add', async () => {
    const leaf = pki.leaf('any', ['fleet.test']);
    const r = await newCli().run([
      'server',
      '--dev',
      '--listen',
      '127.0.0.1:0',
      '--agent-listen',
      '0.0.0.0:8443',
      '--agent-tls-cert',
      leaf.chainFile,
      '--agent-tls-key',
      leaf.keyFile,
    ]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      'error: the agent listener binds every address (0.0.0.0:8443), which agents cannot connect to: add --agent-url https://NAME:8443 (the name agents reach this server by, in its certificate)\n',
    );
  });

  it('a certificate that does not name --agent-url, or a CA file that does not anchor it: exit 1', async () => {
    const leaf = pki.leaf('named', ['fleet.test']);
    const other = makePki(mkdtempSync(join(dir, 'ca3-')));
    const base = ['server', '--dev', '--listen', '127.0.0.1:0', '--agent-listen', '127.0.0.1:0', '--agent-tls-key', leaf.keyFile];
    const wrongName = await newCli().run([...base, '--agent-tls-cert', leaf.chainFile, '--agent-url', 'https://elsewhere.test']);
    expect(wrongName.exitCode).toBe(1);
    expect(wrongName.stderr).toBe(
      'error: the agent certificate is not valid for elsewhere.test (--agent-url): its names are DNS:fleet.test; agents would refuse it\n',
    );
    const wrongCa = await newCli().run([...base, '--agent-tls-cert', leaf.chainFile, '--agent-ca', other.rootFile]);
    expect(wrongCa.exitCode).toBe(1);
    expect(wrongCa.stderr).toMatch(
      /^error: --agent-ca \S+ does not anchor --agent-tls-cert: nothing in either file issued CN=fleetctl test intermediate CA .*\n$/,
    );
  });

  it('a CA-issued certificate without an anchor: a warning, and agents pinned to nothing; --agent-ca system: no warning', async () => {
    const leaf = pki.leaf('noanchor', ['fleet.test']);
    const args = [
      '--db',
      join(dir, 'noanchor.db'),
      '--create-env',
      'prod',
      '--agent-listen',
      '127.0.0.1:0',
      '--agent-url',
      'https://fleet.test',
      '--agent-tls-cert',
      leaf.chainFile,
      '--agent-tls-key',
      leaf.keyFile,
    ];
    const { s } = await start(args);
    expect(s.output()).toMatch(
      /^warning: the agent certificate is issued by CN=fleetctl test root CA and no trust anchor was given: agents are handed no certificate .*--agent-ca ROOT\.pem, for a public one --agent-ca system/m,
    );
    const cli = newCli();
    await cli.login(s.url, 'admin', 'prod', PASSWORD);
    const flags = (await cli.run(['enroll', 'show', 'prod', 'flags'])).stdout;
    expect(flags).toContain('--tls_hostname=fleet.test\n');
    expect(flags).not.toContain('--tls_server_certs');
    await s.stop();
    const { s: s2 } = await start([...args, '--agent-ca', 'system']);
    expect(s2.output()).not.toContain('warning:');
    expect(s2.output()).toContain('trust nothing pinned: their own CA bundle (--agent-ca system)');
    await s2.stop();
  });

  it('a chain file ending in its root: that root is the anchor', async () => {
    const leaf = pki.leaf('withroot', ['fleet.test']);
    const full = join(dir, 'full-chain.pem');
    writeFileSync(full, readFileSync(leaf.chainFile, 'utf8') + pki.rootPem);
    const { s } = await start([
      '--db',
      join(dir, 'full.db'),
      '--create-env',
      'prod',
      '--agent-listen',
      '127.0.0.1:0',
      '--agent-url',
      'https://fleet.test',
      '--agent-tls-cert',
      full,
      '--agent-tls-key',
      leaf.keyFile,
    ]);
    expect(s.output()).toContain('trust the root CN=fleetctl test root CA (the last certificate of --agent-tls-cert)');
    const cli = newCli();
    await cli.login(s.url, 'admin', 'prod', PASSWORD);
    expect((await cli.run(['enroll', 'show', 'prod', 'cert'])).stdout).toBe(pki.rootPem);
    // The root is not served: agents have it.
    expect(
      (await presentedChain('127.0.0.1', Number(/listening on https:\/\/[^:]+:(\d+)/.exec(s.output())![1]), 'fleet.test')).subjects,
    ).toEqual(['fleet.test', 'fleetctl test intermediate CA']);
    await s.stop();
  });
});
