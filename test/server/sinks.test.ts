// Log sinks over real HTTP: list, create, delete (contract.md 4.18 additions) and clone (4.18).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { createEnvironment } from '../../src/server/seed.js';
import { LOG_SINK, expectError, expectFields } from './activity-spec-fields.js';

let ts: TestServer;
let admin: string;
let prodAdmin: string;
const ids: Record<string, number> = {};

beforeAll(async () => {
  ts = await startTestServer();
  [admin, prodAdmin] = await Promise.all([ts.login('admin', 'prod'), ts.login('prod-admin', 'prod')]);
  for (const e of await ts.server.deps.db.selectFrom('environments').select(['id', 'name']).execute()) ids[e.name] = e.id;
});
afterAll(async () => ts?.close());

const db = () => ts.server.deps.db;
const list = (envId?: number | string, token = admin) =>
  ts.call('GET', `/api/v1/log-sinks${envId === undefined ? '' : `?environment_id=${envId}`}`, { token });
const clone = (body: unknown, token = admin) => ts.call('POST', '/api/v1/log-sinks/clone', { token, body });
const decode = (bytes: number[]) => JSON.parse(Buffer.from(bytes).toString('utf8'));
const sinkCount = async () =>
  Number(
    (
      await db()
        .selectFrom('log_sinks')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const allRows = () => db().selectFrom('log_sinks').selectAll().orderBy('id').execute();

describe('GET /api/v1/log-sinks', () => {
  it('lists the sinks of one scope by order, every field of 2.4, config = UTF-8 bytes of JSON', async () => {
    const r = await list(0);
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.body.length).toBeGreaterThanOrEqual(2);
    for (const s of r.body) {
      expectFields(s, LOG_SINK, s.name);
      expect(s.environment_id).toBe(0);
      expect(s.config.every((b: number) => Number.isInteger(b) && b >= 0 && b <= 255)).toBe(true);
      const row = await db().selectFrom('log_sinks').select('config').where('id', '=', s.id).executeTakeFirstOrThrow();
      expect(decode(s.config)).toEqual(JSON.parse(row.config));
    }
    expect(r.body.map((s: any) => s.order)).toEqual([...r.body.map((s: any) => s.order)].sort((a, b) => a - b));
    const prod = await list(ids.prod);
    expect(prod.body.map((s: any) => s.type)).toEqual(['splunk', 'kafka', 'http', 'file', 'file']);
    expect((await list(ids.dev)).body).toEqual([]);
  });

  it('without environment_id lists every sink; bad id 400; unknown env 404; super-admin only', async () => {
    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body.length).toBe(await sinkCount());
    expectError(await list('abc'), 400, 'bad_request');
    expectError(await list(-1), 400, 'bad_request');
    expectError(await list(9999), 404, 'not_found');
    expectError(await list(0, prodAdmin), 403, 'forbidden');
    expectError(await ts.call('GET', '/api/v1/log-sinks'), 401, 'unauthorized');
  });
});

describe('POST /api/v1/log-sinks', () => {
  it('creates a sink from a JSON object config, appended after the last one', async () => {
    const before = await list(ids.staging);
    const r = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: {
        name: 'staging-file',
        type: 'file',
        source: 'result',
        environment_id: ids.staging,
        config: { path: 'staging/ünïcode.log', max_files: 2 },
      },
    });
    expect(r.status).toBe(200);
    expectFields(r.body, LOG_SINK);
    expect(r.body).toMatchObject({
      name: 'staging-file',
      type: 'file',
      source: 'result',
      environment_id: ids.staging,
      enabled: true,
      info: '',
      bytes_sent: 0,
      exports_count: 0,
    });
    expect(r.body.order).toBe(Math.max(-1, ...before.body.map((s: any) => s.order)) + 1);
    expect(decode(r.body.config)).toEqual({ path: 'staging/ünïcode.log', max_files: 2 });
    const after = await list(ids.staging);
    expect(after.body.map((s: any) => s.id)).toEqual([...before.body.map((s: any) => s.id), r.body.id]);
    const audit = await db().selectFrom('audit_logs').selectAll().where('line', 'like', '%staging-file%created%').executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ log_type: 7, username: 'admin', environment_id: ids.staging });
  });

  it('accepts config as the byte array, with explicit order, info and enabled', async () => {
    const bytes = [...Buffer.from(JSON.stringify({ url: 'https://logs.example.com:8443/in', method: 'PUT' }), 'utf8')];
    const r = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: {
        name: 'global-http',
        type: 'http',
        source: 'status',
        environment_id: 0,
        order: 7,
        info: 'gateway',
        enabled: false,
        config: bytes,
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ environment_id: 0, order: 7, info: 'gateway', enabled: false, config: bytes });
  });

  it('rejects bad values with 400 and creates nothing', async () => {
    const count = await sinkCount();
    const base = { name: 'x-sink', type: 'http', source: 'result', environment_id: 0 };
    const cases: [unknown, string][] = [
      [{ ...base, type: 'carrier-pigeon' }, 'bad_request'],
      [{ ...base, source: 'everything' }, 'bad_request'],
      [{ ...base, environment_id: 9999 }, 'bad_request'],
      [{ ...base, environment_id: '0' }, 'bad_request'],
      [{ ...base, name: '   ' }, 'bad_request'],
      [{ ...base, order: -1 }, 'bad_request'],
      [{ ...base, config: [300, 1] }, 'bad_request'],
      [{ ...base, config: [...Buffer.from('not json')] }, 'bad_request'],
      [{ ...base, config: [...Buffer.from('[1,2]')] }, 'bad_request'],
      [{ ...base, config: [0xff, 0xfe] }, 'bad_request'],
      [{ ...base, config: 'a string' }, 'bad_request'],
      [{ type: 'http', source: 'result', environment_id: 0 }, 'bad_request'],
    ];
    for (const [body, code] of cases) {
      const r = await ts.call('POST', '/api/v1/log-sinks', { token: admin, body });
      expect({ body, status: r.status, code: r.body.code }).toEqual({ body, status: 400, code });
    }
    expectError(await ts.call('POST', '/api/v1/log-sinks', { token: admin, rawBody: '{"name": ' }), 400, 'invalid_json');
    expect(await sinkCount()).toBe(count);
  });

  it('a file sink writes inside the sink directory only: a path outside it, or none, is 400 and nothing is stored (issue 18)', async () => {
    const count = await sinkCount();
    for (const path of ['/etc/profile.d/x.sh', '../outside.log', '/root/.bashrc', '', 'a/../../b.log']) {
      const r = await ts.call('POST', '/api/v1/log-sinks', {
        token: admin,
        body: { name: `f-${Math.random()}`, type: 'file', source: 'result', environment_id: 0, config: { path } },
      });
      expect(r.status, path).toBe(400);
      expect(r.body.code).toBe('bad_request');
    }
    const none = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: { name: 'no-path', type: 'file', source: 'result', environment_id: 0 },
    });
    expect(none.status).toBe(400);
    expect(await sinkCount()).toBe(count);
    const inside = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: { name: 'inside', type: 'file', source: 'result', environment_id: 0, config: { path: 'sub/results.log' } },
    });
    expect(inside.status).toBe(200);
    expect((await ts.call('DELETE', `/api/v1/log-sinks/${inside.body.id}`, { token: admin })).status).toBe(200);
  });

  it('a second sink with the same name in the same scope is 409', async () => {
    const count = await sinkCount();
    const r = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: { name: 'local-file', type: 'file', source: 'result', environment_id: 0, config: { path: 'other.log' } },
    });
    expectError(r, 409, 'conflict');
    expect(await sinkCount()).toBe(count);
  });

  it('is super-admin only', async () => {
    const count = await sinkCount();
    expectError(
      await ts.call('POST', '/api/v1/log-sinks', {
        token: prodAdmin,
        body: { name: 'p', type: 'file', source: 'result', environment_id: ids.prod },
      }),
      403,
      'forbidden',
    );
    expect(await sinkCount()).toBe(count);
  });
});

describe('DELETE /api/v1/log-sinks/{id}', () => {
  it('deletes: 200 {message}, gone from the list, audited; again 404', async () => {
    const target = (await list(0)).body.find((s: any) => s.name === 'global-http');
    const r = await ts.call('DELETE', `/api/v1/log-sinks/${target.id}`, { token: admin });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['message']);
    expect((await list(0)).body.map((s: any) => s.id)).not.toContain(target.id);
    expect(
      await db().selectFrom('audit_logs').select('log_type').where('line', 'like', `log sink ${target.id} %deleted%`).executeTakeFirst(),
    ).toEqual({ log_type: 7 });
    expectError(await ts.call('DELETE', `/api/v1/log-sinks/${target.id}`, { token: admin }), 404, 'not_found');
  });

  it('non-numeric id 400; not super-admin 403 and nothing deleted', async () => {
    expectError(await ts.call('DELETE', '/api/v1/log-sinks/abc', { token: admin }), 400, 'bad_request');
    const count = await sinkCount();
    const some = (await list(0)).body[0];
    expectError(await ts.call('DELETE', `/api/v1/log-sinks/${some.id}`, { token: prodAdmin }), 403, 'forbidden');
    expect(await sinkCount()).toBe(count);
  });
});

describe('POST /api/v1/log-sinks/clone (4.18)', () => {
  it('copies every sink of the source to an empty target: same order, counters reset, new ids', async () => {
    const source = (await list(ids.prod)).body;
    expect(source.some((s: any) => s.exports_count > 0)).toBe(true);
    const r = await clone({ source_environment_id: ids.prod, target_environment_id: ids.dev, overwrite: false });
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(source.length);
    for (const s of r.body) expectFields(s, LOG_SINK, s.name);
    const strip = (s: any) => ({
      name: s.name,
      type: s.type,
      source: s.source,
      info: s.info,
      enabled: s.enabled,
      order: s.order,
      config: s.config,
    });
    expect(r.body.map(strip)).toEqual(source.map(strip));
    for (const s of r.body) expect(s).toMatchObject({ environment_id: ids.dev, bytes_sent: 0, exports_count: 0 });
    expect(r.body.some((s: any) => source.some((o: any) => o.id === s.id))).toBe(false);
    expect((await list(ids.dev)).body).toEqual(r.body);
    expect((await list(ids.prod)).body).toEqual(source);
    const audit = await db()
      .selectFrom('audit_logs')
      .selectAll()
      .where('line', '=', 'log sinks of prod cloned to dev')
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ log_type: 7, username: 'admin', environment_id: ids.dev });
  });

  it('409 when the target has sinks and overwrite is false (or omitted): nothing changed', async () => {
    const before = await allRows();
    expectError(await clone({ source_environment_id: ids.prod, target_environment_id: ids.staging, overwrite: false }), 409, 'conflict');
    expectError(await clone({ source_environment_id: ids.prod, target_environment_id: ids.staging }), 409, 'conflict');
    expect(await allRows()).toEqual(before);
  });

  it('overwrite replaces the target sinks: new ids, counters 0, the source order', async () => {
    const old = (await list(ids.staging)).body;
    expect(old.length).toBeGreaterThan(0);
    const source = (await list(ids.prod)).body;
    const r = await clone({ source_environment_id: ids.prod, target_environment_id: ids.staging, overwrite: true });
    expect(r.status).toBe(200);
    expect(r.body.map((s: any) => [s.name, s.order])).toEqual(source.map((s: any) => [s.name, s.order]));
    expect(r.body.every((s: any) => s.bytes_sent === 0 && s.exports_count === 0 && s.environment_id === ids.staging)).toBe(true);
    const oldIds = new Set(old.map((s: any) => s.id));
    expect(r.body.some((s: any) => oldIds.has(s.id))).toBe(false);
    expect((await list(ids.staging)).body).toEqual(r.body);
  });

  it('overwrite is one transaction: a failure half-way leaves the target as it was', async () => {
    const before = await allRows();
    // Make the second copied row fail to insert.
    if (ts.server.store.dialect === 'postgres') {
      await sql`CREATE FUNCTION fail_clone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`.execute(
        db(),
      );
      await sql`CREATE TRIGGER fail_clone BEFORE INSERT ON log_sinks FOR EACH ROW WHEN (NEW.environment_id = ${sql.lit(ids.staging)} AND NEW.name = 'kafka-queries') EXECUTE FUNCTION fail_clone()`.execute(
        db(),
      );
    } else {
      await sql`CREATE TRIGGER fail_clone BEFORE INSERT ON log_sinks WHEN NEW.environment_id = ${sql.lit(ids.staging)} AND NEW.name = 'kafka-queries' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`.execute(
        db(),
      );
    }
    try {
      const r = await clone({ source_environment_id: ids.prod, target_environment_id: ids.staging, overwrite: true });
      expectError(r, 500, 'internal');
      expect(JSON.stringify(r.body)).not.toMatch(/injected|INSERT|log_sinks/);
    } finally {
      if (ts.server.store.dialect === 'postgres') {
        await sql`DROP TRIGGER fail_clone ON log_sinks`.execute(db());
        await sql`DROP FUNCTION fail_clone`.execute(db());
      } else await sql`DROP TRIGGER fail_clone`.execute(db());
    }
    expect(await allRows()).toEqual(before);
  });

  it('the global scope (0) works as source and as target', async () => {
    const global = (await list(0)).body;
    const fresh = await createEnvironment(db(), 'sink-empty', {
      uuid: '00000000-0000-4000-a000-00000000beef',
      hostname: 'h',
      now: new Date(),
    });
    const r = await clone({ source_environment_id: 0, target_environment_id: fresh });
    expect(r.status).toBe(200);
    expect(r.body.map((s: any) => s.name)).toEqual(global.map((s: any) => s.name));
    expectError(await clone({ source_environment_id: ids.prod, target_environment_id: 0 }), 409, 'conflict');
    const promoted = await clone({ source_environment_id: ids.prod, target_environment_id: 0, overwrite: true });
    expect(promoted.status).toBe(200);
    expect(promoted.body.map((s: any) => [s.name, s.environment_id])).toEqual((await list(ids.prod)).body.map((s: any) => [s.name, 0]));
  });

  it('400 for source = target, unknown ids, an empty source, wrong types; nothing changed', async () => {
    const before = await allRows();
    const empty = await createEnvironment(db(), 'sink-none', {
      uuid: '00000000-0000-4000-a000-00000000cafe',
      hostname: 'h',
      now: new Date(),
    });
    const cases: [unknown, string][] = [
      [{ source_environment_id: ids.prod, target_environment_id: ids.prod, overwrite: true }, 'bad_request'],
      [{ source_environment_id: 0, target_environment_id: 0, overwrite: true }, 'bad_request'],
      [{ source_environment_id: 9999, target_environment_id: ids.dev, overwrite: true }, 'bad_request'],
      [{ source_environment_id: ids.prod, target_environment_id: 9999, overwrite: true }, 'bad_request'],
      [{ source_environment_id: -1, target_environment_id: ids.dev, overwrite: true }, 'bad_request'],
      [{ source_environment_id: empty, target_environment_id: ids.dev, overwrite: true }, 'bad_request'],
      [{ source_environment_id: String(ids.prod), target_environment_id: ids.dev, overwrite: true }, 'bad_request'],
      [{ source_environment_id: ids.prod, target_environment_id: ids.dev, overwrite: 'yes' }, 'bad_request'],
      [{ target_environment_id: ids.dev }, 'bad_request'],
    ];
    for (const [body, code] of cases) {
      const r = await clone(body);
      expect({ body, status: r.status, code: r.body.code }).toEqual({ body, status: 400, code });
      expect(typeof r.body.error).toBe('string');
    }
    expectError(await ts.call('POST', '/api/v1/log-sinks/clone', { token: admin, rawBody: 'not json' }), 400, 'invalid_json');
    expectError(await ts.call('POST', '/api/v1/log-sinks/clone', { token: admin }), 400, 'bad_request');
    expect(await allRows()).toEqual(before);
  });

  it('super-admin only: 403 and 401, nothing changed', async () => {
    const before = await allRows();
    expectError(
      await clone({ source_environment_id: ids.prod, target_environment_id: ids.dev, overwrite: true }, prodAdmin),
      403,
      'forbidden',
    );
    expectError(
      await ts.call('POST', '/api/v1/log-sinks/clone', { body: { source_environment_id: ids.prod, target_environment_id: ids.dev } }),
      401,
      'unauthorized',
    );
    expect(await allRows()).toEqual(before);
  });
});
