// Carves over real HTTP: list (contract.md 5), read (4.16), actions (4.17), against the demo data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { CARVE_FILE, CARVE_QUERY, PAGE, expectError, expectFields } from './activity-spec-fields.js';

let ts: TestServer;
let carver: string;
let admin: string;
let analyst: string;

beforeAll(async () => {
  ts = await startTestServer();
  [carver, admin, analyst] = await Promise.all([ts.login('carver', 'prod'), ts.login('admin', 'prod'), ts.login('analyst', 'prod')]);
});
afterAll(async () => ts?.close());

const db = () => ts.server.deps.db;
const envId = async (name: string) =>
  (await db().selectFrom('environments').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;
const read = (env: string, name: string, token = carver) => ts.call('GET', `/api/v1/carves/${env}/${encodeURIComponent(name)}`, { token });
const act = (env: string, action: string, name: string, token = carver) =>
  ts.call('POST', `/api/v1/carves/${env}/${action}/${encodeURIComponent(name)}`, { token });
const auditRows = async (line: string) =>
  db().selectFrom('audit_logs').selectAll().where('line', 'like', `%${line}%`).orderBy('id', 'desc').execute();

describe('GET /api/v1/carves/{env} (list)', () => {
  it('lists the carve queries of the env, newest first, every field of 2.7', async () => {
    const r = await ts.call('GET', '/api/v1/carves/prod', { token: carver });
    expect(r.status).toBe(200);
    expectFields(r.body, PAGE, 'page');
    for (const item of r.body.items) expectFields(item, CARVE_QUERY, item.name);
    const expected = await db()
      .selectFrom('queries')
      .select('name')
      .where('environment_id', '=', await envId('prod'))
      .where('type', '=', 'carve')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    expect(r.body.items.map((i: any) => i.name)).toEqual(expected.map((e) => e.name));
    expect(r.body.items.every((i: any) => i.type === 'carve')).toBe(true);
    expect(r.body.total_items).toBe(expected.length);
    expect(new Set(r.body.items.map((i: any) => i.carve_status))).toEqual(
      new Set(['ACTIVE', 'PENDING', 'COMPLETED', 'EXPIRED', 'DELETED']),
    );
    expect(r.body).toMatchObject({ page: 1, page_size: 50, total_pages: 1 });
  });

  it('the demo gives every env a carve in each carve_status and files in each file status', async () => {
    for (const env of ['prod', 'staging', 'dev']) {
      const r = await ts.call('GET', `/api/v1/carves/${env}`, { token: admin });
      expect(new Set(r.body.items.map((i: any) => i.carve_status))).toEqual(
        new Set(['ACTIVE', 'PENDING', 'COMPLETED', 'EXPIRED', 'DELETED']),
      );
      const statuses = new Set<string>();
      for (const c of r.body.items) for (const f of (await read(env, c.name, admin)).body.files) statuses.add(f.status);
      expect(statuses).toEqual(new Set(['QUERIED', 'SCHEDULED', 'IN PROGRESS', 'COMPLETED']));
    }
  });

  it('filters by status (lower-case carve_status) and by q on name or path', async () => {
    for (const status of ['active', 'pending', 'completed', 'expired', 'deleted']) {
      const r = await ts.call('GET', `/api/v1/carves/prod?status=${status}`, { token: carver });
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeGreaterThan(0);
      expect(r.body.items.every((i: any) => i.carve_status === status.toUpperCase())).toBe(true);
      expect(r.body.total_items).toBe(r.body.items.length);
    }
    const byName = await ts.call('GET', '/api/v1/carves/prod?q=ETC_HOSTS', { token: carver });
    expect(byName.body.items.map((i: any) => i.name)).toEqual(['carve_etc_hosts']);
    const byPath = await ts.call('GET', `/api/v1/carves/prod?q=${encodeURIComponent('/root/')}`, { token: carver });
    expect(byPath.body.items.map((i: any) => i.name).sort()).toEqual(['carve_bash_history', 'carve_ssh_keys']);
    // % and _ are literal: no carve name or path contains "%", and "h_st" is not "hosts".
    const pct = await ts.call('GET', `/api/v1/carves/prod?q=${encodeURIComponent('%')}`, { token: carver });
    expect(pct.body.items).toEqual([]);
    const under = await ts.call('GET', '/api/v1/carves/prod?q=h_st', { token: carver });
    expect(under.body.total_items).toBe(0);
  });

  it('paginates: every carve exactly once, a page past the end is empty', async () => {
    const all = (await ts.call('GET', '/api/v1/carves/prod', { token: carver })).body;
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const r = await ts.call('GET', `/api/v1/carves/prod?page=${page}&page_size=4`, { token: carver });
      expect(r.body).toMatchObject({ page, page_size: 4, total_items: all.total_items, total_pages: Math.ceil(all.total_items / 4) });
      seen.push(...r.body.items.map((i: any) => i.name));
    }
    expect(seen).toEqual(all.items.map((i: any) => i.name));
    const past = await ts.call('GET', '/api/v1/carves/prod?page=9&page_size=4', { token: carver });
    expect(past.status).toBe(200);
    expect(past.body.items).toEqual([]);
  });

  it('rejects bad filters and pagination with 400 {code, error}', async () => {
    expectError(await ts.call('GET', '/api/v1/carves/prod?status=running', { token: carver }), 400, 'bad_request');
    expectError(await ts.call('GET', '/api/v1/carves/prod?page=0', { token: carver }), 400, 'bad_request');
    expectError(await ts.call('GET', '/api/v1/carves/prod?page_size=ten', { token: carver }), 400, 'bad_request');
  });

  it('needs carve access on the env; unknown env 404; no token 401', async () => {
    expectError(await ts.call('GET', '/api/v1/carves/prod', { token: analyst }), 403, 'forbidden');
    expectError(await ts.call('GET', '/api/v1/carves/dev', { token: carver }), 403, 'forbidden');
    expectError(await ts.call('GET', '/api/v1/carves/nope', { token: carver }), 404, 'not_found');
    expectError(await ts.call('GET', '/api/v1/carves/prod'), 401, 'unauthorized');
    const prodAdmin = await ts.login('prod-admin', 'prod');
    expect((await ts.call('GET', '/api/v1/carves/prod', { token: prodAdmin })).status).toBe(200);
  });
});

describe('GET /api/v1/carves/{env}/{name} (4.16)', () => {
  it('returns {files, query} with every field of 2.7 and 2.8', async () => {
    const r = await read('prod', 'carve_bash_history');
    expect(r.status).toBe(200);
    // refusals: fleetctl's server's addition (issue 26): why nodes' carver starts were refused.
    expect(Object.keys(r.body).sort()).toEqual(['files', 'query', 'refusals']);
    expect(r.body.refusals).toEqual([]);
    expectFields(r.body.query, CARVE_QUERY, 'query');
    expect(r.body.query).toMatchObject({ name: 'carve_bash_history', type: 'carve', path: '/root/.bash_history', carve_status: 'PENDING' });
    for (const t of r.body.query.targets) expect(t).toEqual({ type: expect.any(String), value: expect.any(String) });
    expect(r.body.files.length).toBeGreaterThan(0);
    for (const f of r.body.files) expectFields(f, CARVE_FILE, f.uuid);
    expect(new Set(r.body.files.map((f: any) => f.status))).toEqual(new Set(['QUERIED', 'SCHEDULED', 'IN PROGRESS', 'COMPLETED']));
    for (const f of r.body.files) {
      expect(f.total_blocks).toBe(Math.ceil(f.carve_size / f.block_size));
      if (f.status === 'COMPLETED') expect(f.completed_blocks).toBe(f.total_blocks);
      else expect(f.completed_blocks).toBeLessThan(f.total_blocks === 1 ? 1 : f.total_blocks);
    }
  });

  it('derives carve_status: ACTIVE without files, COMPLETED, EXPIRED, DELETED', async () => {
    const expectations: Record<string, string> = {
      carve_auth_log: 'ACTIVE',
      carve_tmp_payload: 'PENDING',
      carve_etc_hosts: 'COMPLETED',
      carve_crontab: 'EXPIRED',
      carve_ssh_keys: 'DELETED',
    };
    for (const [name, status] of Object.entries(expectations)) {
      const r = await read('prod', name);
      expect({ name, status: r.body.query.carve_status }).toEqual({ name, status });
    }
    expect((await read('prod', 'carve_auth_log')).body.files).toEqual([]);
  });

  it('follows the files: no files ACTIVE, some not COMPLETED PENDING, all COMPLETED COMPLETED', async () => {
    const name = 'carve_auth_log';
    const q = await db()
      .selectFrom('queries')
      .select('id')
      .where('name', '=', name)
      .where('environment_id', '=', await envId('staging'))
      .executeTakeFirstOrThrow();
    expect((await read('staging', name)).body.query.carve_status).toBe('ACTIVE');
    const file = (uuid: string, status: string) => ({
      uuid,
      query_id: q.id,
      carve_id: `c-${uuid}`,
      session_id: `s-${uuid}`,
      path: '/var/log/auth.log',
      status,
      archived: 0,
      block_size: 300000,
      carve_size: 600000,
      total_blocks: 2,
      completed_blocks: status === 'COMPLETED' ? 2 : 0,
      created_at: new Date().toISOString(),
      completed_at: '',
    });
    await db()
      .insertInto('carve_files')
      .values([file('t-1', 'COMPLETED'), file('t-2', 'SCHEDULED')])
      .execute();
    expect((await read('staging', name)).body.query.carve_status).toBe('PENDING');
    await db().updateTable('carve_files').set({ status: 'COMPLETED' }).where('uuid', '=', 't-2').execute();
    const done = await read('staging', name);
    expect(done.body.query.carve_status).toBe('COMPLETED');
    expect(done.body.files.map((f: any) => f.uuid)).toEqual(['t-1', 't-2']);
    // A file not yet completed has no completion time: "never", still RFC 3339.
    expect(done.body.files[0].completed_at).toBe('0001-01-01T00:00:00Z');
  });

  it('404 for a standard query, an unknown carve and an unknown env; 403 without carve access', async () => {
    const std = await read('prod', 'listening_ports');
    expectError(std, 404, 'not_found');
    expect(std.body.error).toMatch(/not a carve/);
    expectError(await read('prod', 'no_such_carve'), 404, 'not_found');
    expectError(await read('nope', 'carve_auth_log'), 404, 'not_found');
    expectError(await read('prod', 'carve_auth_log', analyst), 403, 'forbidden');
    const devUser = await ts.login('dev-user', 'dev');
    expectError(await read('dev', 'carve_auth_log', devUser), 403, 'forbidden');
    expectError(await ts.call('GET', '/api/v1/carves/prod/carve_auth_log'), 401, 'unauthorized');
  });

  it('addresses the env by UUID too', async () => {
    const uuid = (await db().selectFrom('environments').select('uuid').where('name', '=', 'prod').executeTakeFirstOrThrow()).uuid;
    const r = await read(uuid, 'carve_etc_hosts');
    expect(r.status).toBe(200);
    expect(r.body.query.environment_id).toBe(await envId('prod'));
  });
});

describe('POST /api/v1/carves/{env}/{action}/{name} (4.17)', () => {
  it('complete: 200 {message}, GET then shows COMPLETED, and an audit row (log_type 5) is written', async () => {
    const r = await act('staging', 'complete', 'carve_tmp_payload');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['message']);
    expect(r.body.message).toMatch(/carve_tmp_payload completed/);
    const after = (await read('staging', 'carve_tmp_payload')).body.query;
    expect(after).toMatchObject({ carve_status: 'COMPLETED', completed: true, active: false });
    const [audit] = await auditRows('carve_tmp_payload completed');
    expect(audit).toMatchObject({ log_type: 5, severity: 1, username: 'carver', environment_id: await envId('staging') });
  });

  it('archive marks the completed files archived and only those', async () => {
    const before = (await read('staging', 'carve_bash_history')).body.files;
    const completed = before.filter((f: any) => f.status === 'COMPLETED' && !f.archived).length;
    expect(completed).toBeGreaterThan(0);
    const r = await act('staging', 'archive', 'carve_bash_history');
    expect(r.status).toBe(200);
    expect(r.body.message).toContain(`${completed} completed file`);
    const after = (await read('staging', 'carve_bash_history')).body.files;
    for (const f of after) expect({ uuid: f.uuid, archived: f.archived }).toEqual({ uuid: f.uuid, archived: f.status === 'COMPLETED' });
    expect((await auditRows('carve_bash_history:')).length).toBeGreaterThan(0);
  });

  it('expire then delete: EXPIRED, then DELETED (deleted wins), then every action is 409', async () => {
    expect((await act('staging', 'expire', 'carve_auth_log')).status).toBe(200);
    expect((await read('staging', 'carve_auth_log')).body.query).toMatchObject({ carve_status: 'EXPIRED', expired: true, active: false });
    expect((await act('staging', 'delete', 'carve_auth_log')).status).toBe(200);
    const deleted = await read('staging', 'carve_auth_log');
    expect(deleted.status).toBe(200);
    expect(deleted.body.query).toMatchObject({ carve_status: 'DELETED', deleted: true, expired: true });
    for (const action of ['delete', 'expire', 'complete', 'archive']) {
      expectError(await act('staging', action, 'carve_auth_log'), 409, 'conflict');
    }
    const listed = await ts.call('GET', '/api/v1/carves/staging?status=deleted', { token: carver });
    expect(listed.body.items.map((i: any) => i.name)).toContain('carve_auth_log');
  });

  it('delete removes the carved files and their blocks (issue 29): the download is then 404, the carve stays listed DELETED', async () => {
    const carve = await db()
      .selectFrom('queries')
      .select('id')
      .where('name', '=', 'carve_etc_hosts')
      .where('environment_id', '=', await envId('staging'))
      .executeTakeFirstOrThrow();
    const sessions = (await db().selectFrom('carve_files').select('session_id').where('query_id', '=', carve.id).execute()).map(
      (f) => f.session_id,
    );
    const blocks = async () =>
      sessions.length ? (await db().selectFrom('carve_blocks').select('block_id').where('session_id', 'in', sessions).execute()).length : 0;
    expect(sessions.length).toBeGreaterThan(0);
    const before = await blocks();
    expect(before).toBeGreaterThan(0);
    const download = (session: string) =>
      ts.call('GET', `/api/v1/carves/staging/archive/carve_etc_hosts?session=${session}`, { token: carver });
    expect((await download(sessions[0])).status).toBe(200);

    const r = await act('staging', 'delete', 'carve_etc_hosts');
    expect(r.status).toBe(200);
    expect(r.body.message).toBe(`carve carve_etc_hosts deleted: ${sessions.length} files (${before} blocks) removed from the server`);
    expect(await blocks()).toBe(0);
    expect(await db().selectFrom('carve_files').select('id').where('query_id', '=', carve.id).execute()).toEqual([]);
    const gone = await download(sessions[0]);
    expectError(gone, 404, 'not_found');
    expect(gone.body.error).toBe('carve "carve_etc_hosts" was deleted: its files were removed from the server');
    const shown = await read('staging', 'carve_etc_hosts');
    expect(shown.body).toMatchObject({ query: { carve_status: 'DELETED', deleted: true }, files: [] });
    expect(await auditRows('carve carve_etc_hosts deleted:')).toHaveLength(1);
  });

  it('unknown action 400 invalid_action, unknown carve 404, standard query 404: nothing changes', async () => {
    const before = await read('staging', 'carve_crontab');
    const bad = await act('staging', 'destroy', 'carve_crontab');
    expectError(bad, 400, 'invalid_action');
    expect(bad.body.error).toMatch(/delete, expire, complete, archive/);
    expectError(await act('staging', 'delete', 'no_such_carve'), 404, 'not_found');
    expectError(await act('staging', 'delete', 'listening_ports'), 404, 'not_found');
    const std = await db()
      .selectFrom('queries')
      .select('deleted')
      .where('name', '=', 'listening_ports')
      .where('environment_id', '=', await envId('staging'))
      .executeTakeFirstOrThrow();
    expect(std.deleted).toBe(0);
    expect((await read('staging', 'carve_crontab')).body).toEqual(before.body);
  });

  it('a malformed JSON body is 400 invalid_json and changes nothing', async () => {
    const before = await read('staging', 'carve_crontab');
    const r = await ts.call('POST', '/api/v1/carves/staging/delete/carve_crontab', { token: carver, rawBody: '{"oops":' });
    expectError(r, 400, 'invalid_json');
    expect((await read('staging', 'carve_crontab')).body).toEqual(before.body);
  });

  it('needs carve access: 403, nothing changes, and the denial is audited', async () => {
    // Denials are audited in aggregate (one row per address, user and minute, with a count).
    const denials = async () => {
      await ts.server.denials.flush();
      const rows = await ts.server.deps.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('username', '=', 'analyst')
        .where('log_type', '=', 9)
        .execute();
      return rows.reduce((n, r) => n + r.count, 0);
    };
    const deniedBefore = await denials();
    const before = await read('prod', 'carve_tmp_payload');
    expectError(await act('prod', 'delete', 'carve_tmp_payload', analyst), 403, 'forbidden');
    expect((await read('prod', 'carve_tmp_payload')).body).toEqual(before.body);
    expect(await denials()).toBe(deniedBefore + 1);
    expectError(await act('prod', 'delete', 'carve_tmp_payload', ''), 401, 'unauthorized');
    expectError(await act('nope', 'delete', 'carve_tmp_payload'), 404, 'not_found');
  });

  it('super-admins may act in any env', async () => {
    const r = await act('dev', 'complete', 'carve_etc_hosts', admin);
    expect(r.status).toBe(200);
  });
});
