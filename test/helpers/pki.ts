// A private PKI made by openssl, as an operator makes one (docs/deploy.md): a root CA, an
// intermediate CA it signs, and leaf certificates for the agent door signed by the intermediate.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Pki {
  dir: string;
  rootPem: string;
  rootFile: string;
  intFile: string;
  /** Issues a leaf for `names` (DNS names or IPs), returns its files (leaf, leaf+intermediate chain, key). */
  leaf(tag: string, names: string[], o?: { days?: number }): Leaf;
}

export interface Leaf {
  certFile: string;
  chainFile: string;
  keyFile: string;
  serial: string;
}

const ssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** A self-signed certificate (no CA), for the lab case. */
export function selfSignedCert(dir: string, tag: string, names: string[]): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${tag}.pem`);
  const keyFile = join(dir, `${tag}.key`);
  const san = names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  ssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '30',
      '-subj',
      `/CN=${names[0]}`,
      '-addext',
      `subjectAltName=${san}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    dir,
  );
  return { certFile, keyFile };
}

export function makePki(dir: string, o: { rootName?: string } = {}): Pki {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  ssl(
    [
      'req',
      '-x509',
      ...ec,
      '-days',
      '3650',
      '-subj',
      `/CN=${o.rootName ?? 'fleetctl test root CA'}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-keyout',
      'root.key',
      '-out',
      'root.pem',
    ],
    dir,
  );
  ssl(['req', ...ec, '-subj', '/CN=fleetctl test intermediate CA', '-keyout', 'int.key', '-out', 'int.csr'], dir);
  writeFileSync(join(dir, 'int.ext'), 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n');
  ssl(
    [
      'x509',
      '-req',
      '-in',
      'int.csr',
      '-CA',
      'root.pem',
      '-CAkey',
      'root.key',
      '-CAcreateserial',
      '-days',
      '1825',
      '-extfile',
      'int.ext',
      '-out',
      'int.pem',
    ],
    dir,
  );
  return {
    dir,
    rootPem: readFileSync(join(dir, 'root.pem'), 'utf8'),
    rootFile: join(dir, 'root.pem'),
    intFile: join(dir, 'int.pem'),
    leaf(tag, names, lo = {}) {
      const san = names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
      ssl(['req', ...ec, '-subj', `/CN=${names[0]}`, '-keyout', `${tag}.key`, '-out', `${tag}.csr`], dir);
      writeFileSync(join(dir, `${tag}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n`);
      ssl(
        [
          'x509',
          '-req',
          '-in',
          `${tag}.csr`,
          '-CA',
          'int.pem',
          '-CAkey',
          'int.key',
          '-CAcreateserial',
          '-days',
          String(lo.days ?? 90),
          '-extfile',
          `${tag}.ext`,
          '-out',
          `${tag}.pem`,
        ],
        dir,
      );
      const certFile = join(dir, `${tag}.pem`);
      const chainFile = join(dir, `${tag}-chain.pem`);
      writeFileSync(chainFile, readFileSync(certFile, 'utf8') + readFileSync(join(dir, 'int.pem'), 'utf8'));
      const serial = ssl(['x509', '-in', certFile, '-noout', '-serial'], dir)
        .trim()
        .replace(/^serial=/, '');
      return { certFile, chainFile, keyFile: join(dir, `${tag}.key`), serial };
    },
  };
}

/** The certificates a TLS server presents (leaf first), as `openssl x509 -serial` prints their serials, via node:tls. */
export async function presentedChain(host: string, port: number, servername: string): Promise<{ serials: string[]; subjects: string[] }> {
  const tls = await import('node:tls');
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host, port, servername, rejectUnauthorized: false }, () => {
      const out = { serials: [] as string[], subjects: [] as string[] };
      let c = s.getPeerCertificate(true) as import('node:tls').DetailedPeerCertificate | undefined;
      const seen = new Set<string>();
      while (c && c.serialNumber && !seen.has(c.fingerprint256)) {
        seen.add(c.fingerprint256);
        out.serials.push(c.serialNumber.toUpperCase());
        out.subjects.push(String(c.subject.CN ?? ''));
        c = c.issuerCertificate;
      }
      s.end();
      resolve(out);
    });
    s.once('error', reject);
  });
}
