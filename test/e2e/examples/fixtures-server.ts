// Fixtures of the `fleetctl server` examples: they run until Ctrl-C, on the fixed ports they
// name (8080, 9090) in a network namespace of their own, and write system paths
// (/var/lib/fleetctl) in a mount namespace whose /var/lib is an overlay in the sandbox.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { postgresBinDir } from '../../../scripts/pg-cluster.mjs';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';

const PG_SCRIPT = join(import.meta.dirname, 'pg-db-internal.mjs');
const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * The PostgreSQL the deployment examples name, db.internal:5432 over TLS (role fleet, database
 * fleet), started inside the example's namespaces (its own /etc/hosts and loopback) with its CA
 * certificate where the example reads it; stopped afterwards.
 */
export function dbInternal(caPaths: (sb: Sandbox) => string[]): Pick<Fixture, 'namespaces' | 'prelude' | 'after'> {
  const state = (sb: Sandbox) => join(sb.root, 'pg.json');
  return {
    namespaces: ['mount', 'net'],
    prelude: (sb) => `echo '127.0.0.1 db.internal' >> /etc/hosts && ${q(process.execPath)} ${q(PG_SCRIPT)} ${q(state(sb))} ${caPaths(sb).map(q).join(' ')}`,
    after: (sb) => {
      if (!existsSync(state(sb))) return;
      const { dir, data } = JSON.parse(readFileSync(state(sb), 'utf8')) as { dir: string; data: string };
      try {
        const ctl = [join(postgresBinDir()!, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'];
        execFileSync(process.getuid?.() === 0 ? 'runuser' : ctl[0]!, process.getuid?.() === 0 ? ['-u', 'postgres', '--', ...ctl] : ctl.slice(1), { stdio: 'ignore' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export const SERVER_FIXTURES: Record<string, Fixture> = {
  'fleetctl server --dev': { namespaces: ['net'], stop: /Press Ctrl-C to stop\./ },
  'fleetctl server --dev --dev-agents 5 --dev-password s3cret-demo --listen 127.0.0.1:9090   # agents on :9091': {
    namespaces: ['net'],
    stop: /Simulated agents: 5 of 5 enrolled in prod over https:\/\/127\.0\.0\.1:9091/,
  },
  'printf %s "$ADMIN_PW" | fleetctl server --db /var/lib/fleetctl/fleet.db --admin-password-stdin --create-env prod': {
    namespaces: ['mount', 'net'],
    setup: async (sb) => void (sb.env.ADMIN_PW = 'first-admin-pass-1'),
    stop: /listening on http:\/\/127\.0\.0\.1:8080/,
    check: (_r, sb) => expect(existsSync(join(sb.root, 'root', 'var', 'lib', 'fleetctl', 'fleet.db'))).toBe(true),
  },
  // A first start on a new database: the super-admin's password from the environment.
  'FLEETCTL_DB=postgres://fleet:pw@db.internal/fleet?sslmode=verify-full fleetctl server --db-ca ca.pem --listen 0.0.0.0:8080': {
    ...dbInternal((sb) => [join(sb.cwd, 'ca.pem')]),
    setup: async (sb) => void (sb.env.FLEETCTL_ADMIN_PASSWORD = 'first-admin-pass-1'),
    stop: /reference server listening on /,
  },
};
