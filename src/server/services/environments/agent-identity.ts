// The agent door's public identity (issue 27): the name agents connect to (osquery's
// --tls_hostname) and the trust anchor they pin (--tls_server_certs). Data of the server, which
// environments follow unless one was set for them (hostname_pinned, certificate_pinned): the
// flags, certificates and install scripts of every environment are generated from its row, so
// they follow at once.
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';

export interface AgentIdentity {
  /** --tls_hostname: --agent-url's NAME[:PORT], else the agent listener's address. */
  hostname: string;
  /** The anchor agents are handed (PEM), '' when nothing is pinned. */
  certificate: string;
}

/** A certificate as stored: trimmed, one final newline, '' for none. */
export const storedPem = (pem: string) => (pem.trim() === '' ? '' : pem.trim() + '\n');

/**
 * Points every environment that follows the server at its identity (at start and on SIGHUP).
 * Returns how many environments changed their hostname and their certificate.
 */
export async function followServer(db: Kysely<DB>, id: AgentIdentity, now: Date): Promise<{ hostnames: number; certificates: number }> {
  const ts = now.toISOString();
  const cert = storedPem(id.certificate);
  const a = await db
    .updateTable('environments')
    .set({ hostname: id.hostname, updated_at: ts })
    .where('hostname_pinned', '=', 0)
    .where('hostname', '!=', id.hostname)
    .executeTakeFirst();
  const b = await db
    .updateTable('environments')
    .set({ certificate: cert, updated_at: ts })
    .where('certificate_pinned', '=', 0)
    .where('certificate', '!=', cert)
    .executeTakeFirst();
  return { hostnames: Number(a.numUpdatedRows), certificates: Number(b.numUpdatedRows) };
}
