// The agent door's certificate for a bench run: self-signed for 127.0.0.1, as `--dev` makes one.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Writes agent.crt and agent.key into `dir`; returns their paths. */
export function selfSignedCert(dir) {
  const key = join(dir, 'agent.key');
  const cert = join(dir, 'agent.crt');
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  execFileSync('openssl', ['req', '-x509', ...ec, '-keyout', key, '-out', cert, '-days', '2', ...subject], { stdio: 'ignore' });
  return { cert, key };
}
