// An environment's osquery configuration (issue 22): read whole and by part, replace a part,
// patch several at once, the agent's view and its hash, validation with the offending path
// (nothing stored), permissions, audit, and what an agent then receives over the agent door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { auditRows } from './env-helpers.js';

let t: TestServer;
let admin: string;
let prodAdmin: string;
let flags: Flags;
let secret: string;
let ca: string;

const cfg = (path = '', token = admin) => t.call('GET', `/api/v1/environments/staging/config${path}`, { token });
const put = (part: string, body: unknown, o: { token?: string; query?: string; headers?: Record<string, string>; raw?: string } = {}) =>
  t.call('PUT', `/api/v1/environments/staging/config/${part}${o.query ?? ''}`, {
    token: o.token ?? admin,
    body: o.raw === undefined ? body : undefined,
    rawBody: o.raw,
    headers: o.headers,
  });
const patch = (body: unknown, o: { query?: string; headers?: Record<string, string>; raw?: string } = {}) =>
  t.call('PATCH', `/api/v1/environments/staging/config${o.query ?? ''}`, {
    token: admin,
    body: o.raw === undefined ? body : undefined,
    rawBody: o.raw,
    headers: o.headers,
  });

const USERS = { query: 'SELECT uid, username FROM users', interval: 60 };

beforeAll(async () => {
  t = await startTestServer({ devNodes: 10, agent: { host: '127.0.0.1', port: 0 } });
  admin = await t.login('admin');
  prodAdmin = await t.login('prod-admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/staging/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/staging/enroll/secret', { token: admin })).body.data;
});
afterAll(async () => t?.close());

describe('reading', () => {
  it('gives every part, the hash agents get, and the seeded options unwrapped', async () => {
    const r = await cfg();
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ environment: 'staging', schedule: {}, packs: {}, decorators: {}, atc: {} });
    expect(r.body.options).toEqual({ disable_distributed: false });
    expect(r.body.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(r.headers.get('etag')).toBe(`"${r.body.hash}"`);
    const agent = await t.call('GET', '/api/v1/environments/staging/agent-config', { token: admin });
    expect(agent.body.hash).toBe(r.body.hash);
    expect(Object.keys(agent.body.config)).toEqual(['options', 'schedule', 'packs', 'decorators', 'auto_table_construction']);
    // The Environment resource's configuration is what agents get, also before any change here.
    const env = (await t.call('GET', '/api/v1/environments/staging', { token: admin })).body;
    expect(JSON.parse(env.configuration)).toEqual(agent.body.config);
  });

  it('gives one part alone; an unknown part is 400 invalid_target', async () => {
    const r = await cfg('/schedule');
    expect(Object.keys(r.body).sort()).toEqual(['environment', 'hash', 'schedule', 'updated_at']);
    const bad = await cfg('/queries');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_target');
  });

  it('needs env admin: prod-admin is refused on staging, a query user on prod', async () => {
    expect((await cfg('', prodAdmin)).status).toBe(403);
    const querier = await t.login('querier');
    expect((await t.call('GET', '/api/v1/environments/prod/config', { token: querier })).status).toBe(403);
    expect((await t.call('GET', '/api/v1/environments/prod/config', { token: prodAdmin })).status).toBe(200);
    expect((await put('schedule', { users: USERS }, { token: prodAdmin })).status).toBe(403);
  });
});

describe('changing', () => {
  it('PUT a part: stored in canonical form, the hash moves, audited with who did it', async () => {
    const before = (await cfg()).body.hash;
    const r = await put('schedule', { users: { interval: 60, query: USERS.query, snapshot: true } });
    expect(r.status).toBe(200);
    expect(r.body.changed).toEqual(['schedule']);
    expect(r.body.hash).not.toBe(before);
    expect(JSON.stringify(r.body.schedule)).toBe(JSON.stringify({ users: { query: USERS.query, interval: 60, snapshot: true } }));
    expect((await cfg()).body.hash).toBe(r.body.hash);
    const [row] = await auditRows(t, 7, 1);
    expect(row).toMatchObject({ username: 'admin', log_type: 7 });
    expect(row.line).toContain('osquery configuration of staging changed: schedule (+users)');
    // The Environment resource carries the parts and the assembled configuration too (as osctrl's).
    const env = (await t.call('GET', '/api/v1/environments/staging', { token: admin })).body;
    expect(JSON.parse(env.schedule)).toEqual(r.body.schedule);
    expect(JSON.parse(env.configuration).schedule).toEqual(r.body.schedule);
  });

  it('the same content again changes nothing: same hash, no audit row', async () => {
    const hash = (await cfg()).body.hash;
    const audits = (await auditRows(t, 7, 100)).length;
    const r = await put('schedule', { users: { snapshot: true, query: USERS.query, interval: 60 } });
    expect(r.body).toMatchObject({ changed: [], hash });
    expect((await auditRows(t, 7, 100)).length).toBe(audits);
  });

  it('PATCH replaces several parts in one change; dry_run validates and stores nothing', async () => {
    const hash = (await cfg()).body.hash;
    const body = {
      packs: { web: { platform: 'linux', queries: { procs: { query: 'SELECT pid, name FROM processes', interval: 300 } } } },
      decorators: { load: ['SELECT uuid AS host_uuid FROM system_info'], interval: { '3600': ['SELECT total_seconds FROM uptime'] } },
    };
    const dry = await patch(body, { query: '?dry_run=true' });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ dry_run: true, changed: ['packs', 'decorators'] });
    expect(dry.body.hash).not.toBe(hash);
    expect((await cfg()).body.hash).toBe(hash);
    const wet = await patch(body);
    expect(wet.body.hash).toBe(dry.body.hash);
    expect((await cfg('/packs')).body.packs).toEqual(body.packs);
  });

  it('If-Match with an old hash is 409 and changes nothing', async () => {
    const stale = 'a'.repeat(64);
    const r = await put('options', { verbose: true }, { headers: { 'if-match': `"${stale}"` } });
    expect(r.status).toBe(409);
    expect((await cfg('/options')).body.options).not.toHaveProperty('verbose');
    const current = (await cfg()).body.hash;
    expect((await put('options', { verbose: false, host_identifier: 'uuid' }, { headers: { 'if-match': `"${current}"` } })).status).toBe(
      200,
    );
  });
});

describe('bad input: 400 with the offending path, nothing stored', () => {
  const cases: [string, string, unknown, RegExp][] = [
    [
      'interval 0',
      'schedule',
      { users_query: { query: 'SELECT 1', interval: 0 } },
      /^schedule\.users_query\.interval: must be a positive integer/,
    ],
    ['interval over a week', 'schedule', { q: { query: 'SELECT 1', interval: 604801 } }, /^schedule\.q\.interval: must be at most 604800/],
    ['interval as text', 'schedule', { q: { query: 'SELECT 1', interval: '60' } }, /^schedule\.q\.interval: must be a positive integer/],
    ['no interval', 'schedule', { q: { query: 'SELECT 1' } }, /^schedule\.q\.interval: required/],
    [
      'bad SQL',
      'schedule',
      { q: { query: 'SELEC * FROM users', interval: 60 } },
      /^schedule\.q\.query: SQL syntax error at line 1, column 1 near "SELEC/,
    ],
    ['two statements', 'schedule', { q: { query: 'SELECT 1; SELECT 2', interval: 60 } }, /^schedule\.q\.query: must be one statement/],
    ['not a SELECT', 'schedule', { q: { query: 'DELETE FROM users', interval: 60 } }, /^schedule\.q\.query: must be a SELECT statement/],
    ['empty SQL', 'schedule', { q: { query: '  ', interval: 60 } }, /^schedule\.q\.query: must not be empty/],
    ['unknown field', 'schedule', { q: { query: 'SELECT 1', interval: 60, intervall: 5 } }, /^schedule\.q\.intervall: unknown field/],
    [
      'bad platform',
      'schedule',
      { q: { query: 'SELECT 1', interval: 60, platform: 'macos' } },
      /^schedule\.q\.platform: unknown platform "macos"/,
    ],
    ['bad shard', 'packs', { p: { shard: 0, queries: {} } }, /^packs\.p\.shard: must be an integer from 1 to 100/],
    [
      'pack query SQL',
      'packs',
      { p: { queries: { x: { query: 'SELECT FROM', interval: 5 } } } },
      /^packs\.p\.queries\.x\.query: SQL syntax error/,
    ],
    ['discovery SQL', 'packs', { p: { discovery: ['SELECT (1'], queries: {} } }, /^packs\.p\.discovery\[0\]: SQL syntax error/],
    [
      'decorator interval',
      'decorators',
      { interval: { '90': ['SELECT 1'] } },
      /^decorators\.interval\["90"\]: the key must be seconds, a multiple of 60/,
    ],
    ['decorator key', 'decorators', { sometimes: [] }, /^decorators\.sometimes: unknown field/],
    ['atc columns', 'atc', { t: { query: 'SELECT a FROM t', path: '/x.db', columns: [] } }, /^atc\.t\.columns: must be a non-empty list/],
    ['option value', 'options', { verbose: { on: true } }, /^options\.verbose: must be a string, number or boolean/],
    [
      'odd name quoted',
      'schedule',
      { 'my query': { query: 'SELECT 1', interval: -5 } },
      /^schedule\["my query"\]\.interval: must be a positive integer/,
    ],
  ];
  for (const [what, part, body, message] of cases) {
    it(what, async () => {
      const before = await cfg();
      const r = await put(part, body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('bad_request');
      expect(r.body.error).toMatch(message);
      expect((await cfg()).body).toEqual(before.body);
    });
  }

  it('a name given twice in the JSON body (JSON.parse would keep the last)', async () => {
    const before = (await cfg()).body.hash;
    const raw = '{"users": {"query": "SELECT 1", "interval": 60}, "users": {"query": "SELECT 2", "interval": 60}}';
    const r = await put('schedule', undefined, { raw });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('schedule.users: duplicate name (given twice)');
    const r2 = await patch(undefined, { raw: '{"packs": {"a": {"queries": {}}, "a": {"queries": {}}}}' });
    expect(r2.body.error).toBe('packs.a: duplicate name (given twice)');
    expect((await cfg()).body.hash).toBe(before);
  });

  it('a scheduled query named as osquery names a pack query collides', async () => {
    const r = await patch({ schedule: { pack_web_procs: { query: 'SELECT 1', interval: 60 } } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(
      /^schedule\.pack_web_procs: duplicate name: osquery also names query "procs" of pack "web" pack_web_procs/,
    );
  });

  it('one bad part refuses the whole PATCH; unknown parts and empty bodies are 400', async () => {
    const before = (await cfg()).body;
    const r = await patch({ options: { verbose: true }, schedule: { q: { query: 'SELECT 1', interval: 0 } } });
    expect(r.status).toBe(400);
    expect((await cfg()).body).toEqual(before);
    expect((await patch({ queries: {} })).body.error).toMatch(/^queries: unknown part/);
    expect((await patch({})).body.error).toMatch(/^nothing to change/);
  });
});

describe('what the agents get', () => {
  it('an agent fetches the stored configuration; its node records the hash and when', async () => {
    const uuid = randomUUID();
    const enroll = await agentPost(
      flags.hostname,
      flags.endpoint.enroll,
      { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'cfg-host') },
      { ca },
    );
    const key = enroll.body.node_key as string;
    const view = (await t.call('GET', '/api/v1/environments/staging/agent-config', { token: admin })).body;
    const got = await agentPost(flags.hostname, flags.endpoint.config, { node_key: key }, { ca });
    expect(got.body).toEqual({ ...view.config, node_invalid: false });
    const node = await eventually(async () => {
      const n = (await t.call('GET', `/api/v1/nodes/staging/node/${uuid}`, { token: admin })).body;
      return n.config_hash === view.hash ? n : undefined;
    }, 'the config hash recorded');
    expect(node.config_fetched_at).not.toBe('0001-01-01T00:00:00Z');
    const current = await t.call('GET', `/api/v1/nodes/staging?config=current&q=${uuid}`, { token: admin });
    expect(current.body.items.map((n: { uuid: string }) => n.uuid)).toEqual([uuid]);

    // A change makes it stale until its next fetch.
    await put('schedule', { users: USERS, time: { query: 'SELECT unix_time FROM time', interval: 10 } });
    const stale = await t.call('GET', '/api/v1/nodes/staging?config=stale', { token: admin });
    expect(stale.body.items.map((n: { uuid: string }) => n.uuid)).toContain(uuid);
    await agentPost(flags.hostname, flags.endpoint.config, { node_key: key }, { ca });
    await eventually(async () => {
      const r = await t.call('GET', `/api/v1/nodes/staging?config=stale&q=${uuid}`, { token: admin });
      return r.body.total_items === 0 ? true : undefined;
    }, 'the node current again');
    expect((await t.call('GET', '/api/v1/nodes/staging?config=old', { token: admin })).status).toBe(400);
  });
});
