// Issue 14: two `fleetctl server` processes (the built CLI, real processes) on one database act
// as one server. Runs in both projects: on PostgreSQL (the deployment this is for: both
// replicas start at once on an empty database) and on one SQLite file shared by two processes
// on one host (started one after the other: SQLite has no advisory lock).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { onPostgres, testDatabaseUrl } from '../helpers/test-db.js';
import { selfSigned } from '../../src/server/agent/listener.js';
import { openSqlite, type Store } from '../../src/server/store/db.js';
import { openPostgres } from '../../src/server/store/postgres.js';
import { totpCode } from '../../src/lib/totp.js';
import { MFA_MAX_FAILURES } from '../../src/server/services/auth/mfa.js';

const PASSWORD = 'replica-test-password-1';
const LOGIN_LIMIT = 30;
let dir: string;
let database: string;
let a: ServerProcess;
let b: ServerProcess;
let ca: string;
let flags: Flags;
let secret: string;
let token: string;
let store: Store;

const agentAddress = (s: ServerProcess) => /Agent API \(osquery TLS\) listening on https:\/\/(\S+);/.exec(s.output())![1];

/** HTTP from a loopback address of its own, so per-address limits see only this test's requests. */
function from(localAddress: string) {
  return (url: string, method: string, body?: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = httpRequest(
        url,
        { method, localAddress, headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...headers } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
        },
      );
      req.on('error', reject);
      req.end(data);
    });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-replicas-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  database = onPostgres ? (await testDatabaseUrl())! : join(dir, 'fleet.db');
  const args = [
    '--db',
    database,
    '--create-env',
    'prod',
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    certFile,
    '--agent-tls-key',
    keyFile,
    '--login-rate-limit',
    String(LOGIN_LIMIT),
    '--denied-rate-limit',
    '1000',
    '--account-login-limit',
    '1000',
    // The concurrent readers below are one user's thousands of requests a minute.
    '--api-rate-limit',
    '1000000',
  ];
  const start = () => startServerProcess(args, { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } });
  if (onPostgres) [a, b] = await Promise.all([start(), start()]);
  else {
    a = await start();
    b = await start();
  }
  store = onPostgres ? await openPostgres(database, { pool: 2 }) : await openSqlite(database);
  token = await apiToken(a.url, 'admin', PASSWORD);
  flags = parseFlags((await apiCall(a.url, 'GET', '/api/v1/environments/prod/enroll/flags', { token })).body.data);
  secret = (await apiCall(a.url, 'GET', '/api/v1/environments/prod/enroll/secret', { token })).body.data;
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe(`two replicas on one ${onPostgres ? 'PostgreSQL' : 'SQLite'} database`, () => {
  it('both came up on the empty database: one admin, one prod, one JWT secret', async () => {
    expect((await store.db.selectFrom('users').select('username').execute()).map((u) => u.username)).toEqual(['admin']);
    expect((await store.db.selectFrom('environments').select('name').execute()).map((e) => e.name)).toEqual(['prod']);
    expect(await store.db.selectFrom('server_meta').select('key').where('key', '=', 'jwt_secret').execute()).toHaveLength(1);
  });

  it('each answers GET /healthz for the load balancer, without a token', async () => {
    for (const s of [a, b]) {
      const r = await apiCall(s.url, 'GET', '/healthz');
      expect(r).toEqual({ status: 200, body: { status: 'ok', database: onPostgres ? 'postgres' : 'sqlite', version: pkg.version } });
    }
  });

  it('a token from A works on B', async () => {
    const r = await apiCall(b.url, 'GET', '/api/v1/nodes/prod', { token });
    expect(r.status).toBe(200);
  });

  it('a logout on A ends the session on B at once', async () => {
    const t = await apiToken(a.url, 'admin', PASSWORD);
    expect((await apiCall(b.url, 'GET', '/api/v1/nodes/prod', { token: t })).status).toBe(200);
    expect((await apiCall(a.url, 'POST', '/api/v1/logout', { token: t })).status).toBe(200);
    const after = await apiCall(b.url, 'GET', '/api/v1/nodes/prod', { token: t });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('token_expired');
  });

  // B's concurrent requests share reads of the change counters (lib/fresh-read.ts); a request
  // must never be answered from a read that started before it arrived, so before A's logout.
  it('under 16 concurrent readers on B, each logout on A ends the session on B at once', async () => {
    let busy = true;
    let served = 0;
    const readers = Array.from({ length: 16 }, async () => {
      while (busy) {
        expect((await apiCall(b.url, 'GET', '/api/v1/nodes/prod?sort=hostname', { token })).status).toBe(200);
        served++;
      }
    });
    try {
      for (let i = 0; i < 15; i++) {
        const t = await apiToken(a.url, 'admin', PASSWORD);
        expect((await apiCall(b.url, 'GET', '/api/v1/nodes/prod', { token: t })).status).toBe(200);
        expect((await apiCall(a.url, 'POST', '/api/v1/logout', { token: t })).status).toBe(200);
        expect((await apiCall(b.url, 'GET', '/api/v1/nodes/prod', { token: t })).status).toBe(401);
      }
    } finally {
      busy = false;
      await Promise.all(readers);
    }
    expect(served).toBeGreaterThan(15);
  });

  it('the login rate limit counts attempts on both replicas together', async () => {
    const call = from('127.0.0.7');
    const statuses: number[] = [];
    for (let i = 0; i <= LOGIN_LIMIT; i++) {
      const url = (i % 2 ? b : a).url;
      statuses.push((await call(`${url}/api/v1/login/prod`, 'POST', { username: 'nobody', password: 'wrong-password-1' })).status);
    }
    expect(statuses.slice(0, LOGIN_LIMIT), statuses.join(' ')).toEqual(Array(LOGIN_LIMIT).fill(401));
    expect(statuses[LOGIN_LIMIT]).toBe(429); // the 31st, 15 of them on each replica
    // Another address is not affected.
    expect(
      (await from('127.0.0.8')(`${a.url}/api/v1/login/prod`, 'POST', { username: 'nobody', password: 'wrong-password-1' })).status,
    ).toBe(401);
  });

  it('an agent enrolled through A checks in on B', async () => {
    const uuid = randomUUID();
    const enrolled = await agentPost(
      agentAddress(a),
      flags.endpoint.enroll,
      { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'replica-host') },
      { ca },
    );
    expect(enrolled.body.node_invalid).toBe(false);
    const before = (await apiCall(a.url, 'GET', `/api/v1/nodes/prod/node/${uuid}`, { token })).body;
    await new Promise((r) => setTimeout(r, 20));
    const cfg = await agentPost(agentAddress(b), flags.endpoint.config, { node_key: enrolled.body.node_key }, { ca });
    expect(cfg.status).toBe(200);
    expect(cfg.body.node_invalid).toBe(false);
    // B batches check-ins (1 s); A reads the same row.
    await eventually(async () => {
      const n = (await apiCall(a.url, 'GET', `/api/v1/nodes/prod/node/${uuid}`, { token })).body;
      return n.last_seen > before.last_seen ? n : undefined;
    }, 'the check-in on B to reach the node A shows');
  });

  it('denials on both replicas aggregate into one audit row', async () => {
    const call = from('127.0.0.9');
    for (let i = 0; i < 10; i++) {
      const r = await call(`${(i % 2 ? b : a).url}/api/v1/nodes/prod`, 'GET', undefined, { authorization: 'Bearer not-a-token' });
      expect(r.status).toBe(401);
    }
    // Each replica adds its count every 5 s.
    const rows = await eventually(async () => {
      const r = await store.db.selectFrom('audit_logs').select(['id', 'count', 'line']).where('source_ip', '=', '127.0.0.9').execute();
      return r.length === 1 && r[0].count === 10 ? r : undefined;
    }, 'one audit row counting all 10 denials');
    expect(rows[0].line, rows[0].line).toMatch(/\[10 denied requests from 127\.0\.0\.9/);
  });

  it('an MFA challenge issued by A is answered on B, and its wrong codes count on both', async () => {
    const t = await apiToken(a.url, 'admin', PASSWORD);
    const enrolment = await apiCall(a.url, 'POST', '/api/v1/users/me/mfa/totp', { token: t });
    expect(enrolment.status).toBe(200);
    const totp = enrolment.body.secret as string;
    expect(
      (await apiCall(b.url, 'POST', '/api/v1/users/me/mfa/totp/confirm', { token: t, body: { code: totpCode(totp, Date.now()) } })).status,
    ).toBe(200);
    // The confirm used this step; logins use the next one (a step is never accepted twice).
    const good = () => totpCode(totp, Date.now() + 30_000);
    const wrong = () => String((Number(good()) + 500_000) % 1_000_000).padStart(6, '0');
    const challenge = async () => {
      const r = await apiCall(a.url, 'POST', '/api/v1/login/prod', { body: { username: 'admin', password: PASSWORD } });
      expect(r.body.code).toBe('mfa_required');
      return r.body.challenge as string;
    };
    const answer = (s: ServerProcess, c: string, code: string) =>
      apiCall(s.url, 'POST', '/api/v1/login/mfa', { body: { challenge: c, method: 'totp', code } });

    const c1 = await challenge();
    const statuses: number[] = [];
    for (let i = 0; i < MFA_MAX_FAILURES; i++) statuses.push((await answer(i % 2 ? b : a, c1, wrong())).status);
    expect(statuses).toEqual([403, 403, 403, 403, 429]); // 5 wrong codes, 3 on A and 2 on B: revoked
    expect((await answer(b, c1, good())).status).toBe(400); // the revoked challenge, on the other replica

    const c2 = await challenge();
    expect((await answer(a, c2, wrong())).status).toBe(403);
    const ok = await answer(b, c2, good());
    expect(ok.status).toBe(200);
    expect((await apiCall(a.url, 'GET', '/api/v1/nodes/prod', { token: ok.body.token })).status).toBe(200);
  });
});
