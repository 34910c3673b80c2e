// A real rsyslog (Debian's package, installed by scripts/test-deps.mjs) on loopback for the
// syslog sink tests, and as a newline-framed TCP/UDP receiver for logstash's json_lines framing:
// UDP, TCP (RFC 6587 octet counting or newline framing, rsyslog tells them apart) and TLS
// (RFC 5425, rsyslog's OpenSSL driver with our private CA). Each input writes what rsyslog parsed,
// one JSON object a line (rsyslog's own jsonf template), into <dir>/<input>.jsonl. It runs in the
// foreground with its own configuration, no imuxsock, no /dev/log, and is stopped by its PID.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LineFile } from './lines.js';
import { PeerProcess, freePort, portOpen, tempDir } from './peer.js';
import { makeCa } from './tls.js';

export interface SyslogMessage {
  pri: string;
  facility: string;
  severity: string;
  timestamp: string;
  hostname: string;
  appname: string;
  procid: string;
  msgid: string;
  sd: string;
  msg: string;
  /** The frame's content exactly as received (after octet-count framing is removed). */
  raw: string;
}

export interface Rsyslog {
  udp: number;
  tcp: number;
  tls: number;
  /** The CA certificate (PEM) the TLS input's certificate is issued by. */
  ca: string;
  /** What arrived on one input, parsed by rsyslog. */
  messages(input: 'udp' | 'tcp' | 'tls'): SyslogMessage[];
  version: string;
  stop(): Promise<void>;
  /** An outage: stopped by its PID, started again later with the same ports. */
  pause(): Promise<void>;
  resume(): Promise<void>;
}

const TEMPLATE = `template(name="fields" type="list" option.jsonf="on") {
  property(outname="pri" name="pri" format="jsonf")
  property(outname="facility" name="syslogfacility-text" format="jsonf")
  property(outname="severity" name="syslogseverity-text" format="jsonf")
  property(outname="timestamp" name="timereported" dateFormat="rfc3339" format="jsonf")
  property(outname="hostname" name="hostname" format="jsonf")
  property(outname="appname" name="app-name" format="jsonf")
  property(outname="procid" name="procid" format="jsonf")
  property(outname="msgid" name="msgid" format="jsonf")
  property(outname="sd" name="structured-data" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
  property(outname="raw" name="rawmsg" format="jsonf")
}`;

export async function startRsyslog(): Promise<Rsyslog> {
  const dir = tempDir('rsyslog');
  mkdirSync(join(dir, 'work'));
  const tls = makeCa(dir);
  const [udp, tcp, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const out = (n: string) => join(dir, `${n}.jsonl`);
  const conf = `global(workDirectory="${dir}/work" maxMessageSize="4m"
  defaultNetstreamDriverCAFile="${tls.caFile}" defaultNetstreamDriverCertFile="${tls.certFile}" defaultNetstreamDriverKeyFile="${tls.keyFile}")
module(load="imudp")
module(load="imtcp" maxSessions="1000")
${TEMPLATE}
ruleset(name="udp") { action(type="omfile" file="${out('udp')}" template="fields") }
ruleset(name="tcp") { action(type="omfile" file="${out('tcp')}" template="fields") }
ruleset(name="tls") { action(type="omfile" file="${out('tls')}" template="fields") }
input(type="imudp" address="127.0.0.1" port="${udp}" ruleset="udp")
input(type="imtcp" address="127.0.0.1" port="${tcp}" ruleset="tcp")
input(type="imtcp" address="127.0.0.1" port="${tlsPort}" ruleset="tls" streamDriver.name="ossl" streamDriver.mode="1" streamDriver.authMode="anon")
`;
  writeFileSync(join(dir, 'rsyslog.conf'), conf);
  const proc = new PeerProcess(
    {
      name: 'rsyslogd',
      cmd: 'rsyslogd',
      args: ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'rsyslogd.pid')],
      // Both TCP inputs listening means the configuration was loaded (UDP binds before them).
      ready: async () => (await portOpen(tcp)) && (await portOpen(tlsPort)),
      readyTimeout: 60,
    },
    dir,
  );
  await proc.start();
  const outputs = { udp: new LineFile(out('udp')), tcp: new LineFile(out('tcp')), tls: new LineFile(out('tls')) };
  const version =
    /rsyslogd\s+(\S+)/.exec((await import('node:child_process')).execFileSync('rsyslogd', ['-v'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  return {
    udp,
    tcp,
    tls: tlsPort,
    ca: tls.ca,
    version,
    // rsyslog may be writing a line (a long one in several pieces) as we read: whole lines only.
    messages: (input) =>
      outputs[input]
        .lines()
        .filter(Boolean)
        .map((l) => JSON.parse(l) as SyslogMessage),
    async stop() {
      await proc.stop();
      proc.remove();
    },
    pause: () => proc.stop(),
    resume: () => proc.start(),
  };
}
