// Fixtures of the `fleetctl server` examples: they run until Ctrl-C, on the fixed ports they
// name (8080, 9090) in a network namespace of their own, and write system paths
// (/var/lib/fleetctl) in a mount namespace whose /var/lib is an overlay in the sandbox.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Fixture } from './types.js';

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
  'FLEETCTL_DB=postgres://fleet:pw@db.internal/fleet?sslmode=verify-full fleetctl server --db-ca ca.pem --listen 0.0.0.0:8080': {
    pending: 'needs a PostgreSQL with TLS named db.internal inside the namespace (controls, next)',
  },
};
