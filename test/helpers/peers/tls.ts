// A private CA and a server certificate for 127.0.0.1, made with the openssl command, for the
// peers that speak TLS (rsyslog RFC 5425, Kafka's SSL listener): the sinks must trust the CA given
// in their config (`ca`), not a leaf and not the system store.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCa {
  /** PEM of the CA certificate (what a sink's `ca` key holds). */
  ca: string;
  caFile: string;
  certFile: string;
  /** The server key, unencrypted PKCS#8 PEM. */
  keyFile: string;
}

export function makeCa(dir: string): TestCa {
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=fleetctl test CA',
  );
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  ssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.pem'),
    '-days',
    '2',
    '-extfile',
    f('server.ext'),
  );
  return { ca: readFileSync(f('ca.pem'), 'utf8'), caFile: f('ca.pem'), certFile: f('server.pem'), keyFile: f('server.key') };
}
