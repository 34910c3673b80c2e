// The agent door's TLS identity (issue 27): the chain it serves, its key, and the trust anchor
// agents are handed (enroll show ENV cert, --tls_server_certs, the install scripts).
//
// osquery takes the file of --tls_server_certs as its only trust store: a leaf, or a leaf and
// an intermediate, can never be verified (OpenSSL needs a self-signed root), so agents are
// handed the root that anchors the chain, never the leaf a CA signed:
// - --agent-ca FILE: the self-signed certificates of that file (intermediates in it are served
//   with the leaf instead);
// - else the chain file's last certificate, when it is self-signed (a chain file ending in its root);
// - else the certificate itself, when it is self-signed (--dev, a lab);
// - --agent-ca system: nothing is pinned; agents use the CA bundle they ship with (a public CA);
// - else (a CA-issued leaf and no anchor): nothing is pinned, with a warning at start.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** `--agent-ca system`: the chain ends at a public root the hosts already trust. */
export const SYSTEM_TRUST = 'system';

export interface AgentTlsFiles {
  certFile: string;
  keyFile: string;
  /** A PEM file of the root (and any intermediates), or SYSTEM_TRUST. */
  caFile?: string;
}

export interface AgentTls {
  /** Served to agents: the leaf, then the intermediates up to (not including) the root. */
  chainPem: string;
  keyPem: string;
  /** Handed to agents ('' = pin nothing). */
  anchorPem: string;
  /** Where the anchor comes from, for the banner and the docs. */
  anchorFrom: 'ca-file' | 'chain-root' | 'self-signed' | 'system' | 'none';
  leaf: { subject: string; issuer: string; serial: string; validTo: string; fingerprint256: string };
  /** One line for the operator (a CA-issued certificate without an anchor, expiry close). */
  warnings: string[];
}

/** Why the identity cannot be used: one line naming the flag to fix. */
export class AgentTlsError extends Error {}

const PEM_CERT = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----/g;

export function parseCertificates(text: string, what: string): X509Certificate[] {
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new AgentTlsError(`${what} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch {
      throw new AgentTlsError(`${what}: certificate ${i + 1} does not parse as X.509`);
    }
  });
}

const pemOf = (certs: X509Certificate[]) => certs.map((c) => c.toString().trim()).join('\n') + (certs.length ? '\n' : '');

/** Issued `child` (its name and its signature). */
const issued = (parent: X509Certificate, child: X509Certificate) => child.checkIssued(parent) && child.verify(parent.publicKey);
export const isSelfSigned = (c: X509Certificate) => issued(c, c);

function readText(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new AgentTlsError(`${flag} ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
}

/**
 * Reads and checks the files: the key is the leaf's, the chain is in order, and with an anchor the
 * leaf chains up to it; `agentHost` (the host of --agent-url) must be a name of the leaf.
 */
export function loadAgentTls(files: AgentTlsFiles, o: { agentHost?: string; now?: Date } = {}): AgentTls {
  const given = parseCertificates(readText(files.certFile, '--agent-tls-cert'), `--agent-tls-cert ${files.certFile}`);
  const keyPem = readText(files.keyFile, '--agent-tls-key');
  const leaf = given[0];
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw new AgentTlsError(`--agent-tls-key ${files.keyFile} is not a PEM private key`);
  }
  if (!leaf.checkPrivateKey(key))
    throw new AgentTlsError(
      `--agent-tls-key ${files.keyFile} is not the key of the first certificate in --agent-tls-cert (${leaf.subject.replace(/\n/g, ', ')})`,
    );
  for (let i = 0; i + 1 < given.length; i++) {
    if (!issued(given[i + 1], given[i])) {
      throw new AgentTlsError(
        `--agent-tls-cert ${files.certFile}: certificate ${i + 2} did not issue certificate ${i + 1}; put the leaf first, then each issuer in order`,
      );
    }
  }
  // The served chain: the given certificates without a self-signed root, plus the intermediates of
  // the CA file that continue it.
  const chain = given.filter((c, i) => i === 0 || !isSelfSigned(c));
  let anchors: X509Certificate[] = [];
  let anchorFrom: AgentTls['anchorFrom'];
  const warnings: string[] = [];
  const top = () => chain[chain.length - 1];
  if (files.caFile === SYSTEM_TRUST) {
    anchorFrom = 'system';
  } else if (files.caFile) {
    const ca = parseCertificates(readText(files.caFile, '--agent-ca'), `--agent-ca ${files.caFile}`);
    for (let grew = true; grew;) {
      grew = false;
      const next = ca.find((c) => !isSelfSigned(c) && issued(c, top()) && !chain.some((x) => x.fingerprint256 === c.fingerprint256));
      if (next) {
        chain.push(next);
        grew = true;
      }
    }
    const roots = ca.filter(isSelfSigned);
    const root = (roots.length ? roots : ca).find((c) => issued(c, top()) || c.fingerprint256 === top().fingerprint256);
    if (!root) {
      throw new AgentTlsError(
        `--agent-ca ${files.caFile} does not anchor --agent-tls-cert: nothing in either file issued ${top().subject.replace(/\n/g, ', ')} (issuer ${top().issuer.replace(/\n/g, ', ')}); ` +
          'put the intermediate certificates after the leaf in --agent-tls-cert (or in --agent-ca) and the root in --agent-ca',
      );
    }
    anchors = roots.length ? roots : ca;
    anchorFrom = 'ca-file';
    if (!roots.length)
      warnings.push(
        `warning: --agent-ca ${files.caFile} holds no self-signed root: osquery (OpenSSL) verifies a chain up to a root, so give the root certificate`,
      );
  } else if (given.length > 1 && isSelfSigned(given[given.length - 1])) {
    anchors = [given[given.length - 1]];
    anchorFrom = 'chain-root';
  } else if (given.length === 1 && isSelfSigned(leaf)) {
    anchors = [leaf];
    anchorFrom = 'self-signed';
  } else {
    anchorFrom = 'none';
    warnings.push(
      `warning: the agent certificate is issued by ${top().issuer.replace(/\n/g, ', ')} and no trust anchor was given: agents are handed no certificate and verify the server with the CA bundle osquery ships; for a private CA give --agent-ca ROOT.pem, for a public one --agent-ca system (this warning then goes)`,
    );
  }
  if (o.agentHost && !matchesHost(leaf, o.agentHost)) {
    throw new AgentTlsError(
      `the agent certificate is not valid for ${o.agentHost} (--agent-url): its names are ${leaf.subjectAltName ?? leaf.subject.replace(/\n/g, ', ')}; agents would refuse it`,
    );
  }
  const now = o.now ?? new Date();
  const expires = new Date(leaf.validTo);
  if (expires <= now)
    throw new AgentTlsError(
      `the agent certificate expired on ${expires.toISOString()}: renew it (docs/deploy.md, "Renewing the certificate")`,
    );
  const days = (expires.getTime() - now.getTime()) / 86_400_000;
  if (days < 14)
    warnings.push(
      `warning: the agent certificate expires in ${Math.floor(days)} day(s), on ${expires.toISOString()}: renew it and send the server SIGHUP`,
    );
  return {
    chainPem: pemOf(chain),
    keyPem,
    anchorPem: pemOf(anchors),
    anchorFrom,
    leaf: {
      subject: leaf.subject,
      issuer: leaf.issuer,
      serial: leaf.serialNumber,
      validTo: expires.toISOString(),
      fingerprint256: leaf.fingerprint256,
    },
    warnings,
  };
}

function matchesHost(c: X509Certificate, host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return /^[\d.]+$/.test(h) || h.includes(':') ? c.checkIP(h) !== undefined : c.checkHost(h) !== undefined;
}

/**
 * `--agent-url https://NAME[:PORT]`: the address agents use (a load balancer's may front the
 * server). Returns osquery's --tls_hostname (NAME or NAME:PORT) and the bare host.
 */
export function parseAgentUrl(v: string): { tlsHostname: string; host: string } {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new AgentTlsError(`--agent-url "${v}" is not a URL: give https://NAME[:PORT], e.g. https://fleet.example.com:8443`);
  }
  if (u.protocol !== 'https:') throw new AgentTlsError(`--agent-url "${v}" must be https:// (osquery speaks only TLS to its server)`);
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    throw new AgentTlsError(
      `--agent-url "${v}" must be https://NAME[:PORT] with no path, query or user: agents reach the server's paths below it`,
    );
  }
  if (u.hostname === '0.0.0.0' || u.hostname === '[::]') throw new AgentTlsError(`--agent-url "${v}" names no host agents can reach`);
  return { tlsHostname: u.port ? `${u.hostname}:${u.port}` : u.hostname, host: u.hostname };
}

/** Binding every address (0.0.0.0, ::) says nothing about the name agents should use. */
export const bindsEveryAddress = (host: string) => host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';

/** One line for the start-up banner: where agents connect and what they are handed to trust. */
export function describeTrust(tls: AgentTls, hostname: string): string {
  const subject = (pem: string) => {
    try {
      return new X509Certificate(pem).subject.replace(/\n/g, ', ');
    } catch {
      return 'a certificate';
    }
  };
  const pinned: Record<AgentTls['anchorFrom'], string> = {
    'ca-file': `the root ${subject(tls.anchorPem)} (--agent-ca)`,
    'chain-root': `the root ${subject(tls.anchorPem)} (the last certificate of --agent-tls-cert)`,
    'self-signed': 'the self-signed certificate itself',
    system: 'nothing pinned: their own CA bundle (--agent-ca system)',
    none: 'nothing pinned: their own CA bundle (no --agent-ca)',
  };
  return `Agents connect to ${hostname} (--tls_hostname) and trust ${pinned[tls.anchorFrom]}`;
}
