// Inside an example's mount and network namespaces: a PostgreSQL named db.internal, as the
// deployment examples expect one (port 5432, TLS with a certificate for db.internal, role fleet,
// database fleet). Writes where its data is to STATE (for the fixture to stop it afterwards) and
// its CA certificate (self-signed: it is its own CA) to each CA_OUT path.
//   node pg-db-internal.mjs STATE CA_OUT...
import { execFileSync } from 'node:child_process';
import { chownSync, copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { startCluster } from '../../../scripts/pg-cluster.mjs';

const [state, ...caOut] = process.argv.slice(2);
const cluster = await startCluster({ port: 5432, maxConnections: 50 });
writeFileSync(state, JSON.stringify({ dir: cluster.dir, data: join(cluster.dir, 'data') }));
const cert = join(cluster.dir, 'server.crt');
const key = join(cluster.dir, 'server.key');
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    '/CN=db.internal',
    '-addext',
    'subjectAltName=DNS:db.internal',
  ],
  { stdio: 'ignore' },
);
const { uid, gid } = statSync(cluster.dir);
for (const f of [cert, key]) chownSync(f, uid, gid);
const c = new pg.Client({ connectionString: cluster.url });
await c.connect();
for (const q of [
  `alter system set ssl_cert_file = '${cert}'`,
  `alter system set ssl_key_file = '${key}'`,
  'alter system set ssl = on',
  'select pg_reload_conf()',
  "create role fleet login password 'pw'",
  'create database fleet owner fleet',
])
  await c.query(q);
await c.end();
for (const out of caOut) {
  mkdirSync(dirname(out), { recursive: true });
  copyFileSync(cert, out);
}
