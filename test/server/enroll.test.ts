// POST /api/v1/environments/{env}/enroll/{action} (4.8): expiry, rotation, certificate and packages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { TEST_CERT, auditRows } from './env-helpers.js';

const NEVER = '0001-01-01T00:00:00Z';
const HOUR = 3600_000;

let ts: TestServer;
const tok: Record<string, string> = {};

beforeAll(async () => {
  ts = await startTestServer();
  tok.admin = await ts.login('admin');
  tok.prodAdmin = await ts.login('prod-admin');
  tok.analyst = await ts.login('analyst');
  tok.querier = await ts.login('querier');
  tok.devUser = await ts.login('dev-user', 'dev');
});
afterAll(async () => ts?.close());

const act = (action: string, body?: unknown, o: { env?: string; token?: string } = {}) =>
  ts.call('POST', `/api/v1/environments/${o.env ?? 'prod'}/enroll/${action}`, { token: o.token ?? tok.prodAdmin, body });
const env = async (name = 'prod') => (await ts.call('GET', `/api/v1/environments/${name}`, { token: tok.admin })).body;
const readSecret = async () => (await ts.call('GET', '/api/v1/environments/prod/enroll/secret', { token: tok.prodAdmin })).body.data;

function expectMessage(r: { status: number; body: any }) {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(Object.keys(r.body)).toEqual(['message']);
  expect(r.body.message).toBeTypeOf('string');
  expect(r.body.message).not.toBe('');
}
const near = (iso: string, expectedMs: number) => expect(Math.abs(Date.parse(iso) - expectedMs)).toBeLessThan(60_000);

describe('expiry actions', () => {
  it('expire sets enroll_expire to now, with no body at all', async () => {
    const r = await act('expire');
    expectMessage(r);
    near((await env()).enroll_expire, Date.now());
  });

  it('extend sets enroll_expire to now + 24 h', async () => {
    const r = await act('extend', {});
    expectMessage(r);
    expect(r.body.message).toContain('extended');
    near((await env()).enroll_expire, Date.now() + 24 * HOUR);
  });

  it('accepts an empty body sent with Content-Type: application/json', async () => {
    const r = await ts.call('POST', '/api/v1/environments/prod/enroll/expire', { token: tok.prodAdmin, rawBody: '' });
    expectMessage(r);
    near((await env()).enroll_expire, Date.now());
  });

  it('notexpire sets "never"', async () => {
    expectMessage(await act('notexpire'));
    expect((await env()).enroll_expire).toBe(NEVER);
  });

  it('rotate changes the secret AND the enroll secret path, and expires in 24 h', async () => {
    const before = await env();
    const oldSecret = await readSecret();
    expect(oldSecret).toBe(before.secret);
    const r = await act('rotate');
    expectMessage(r);
    expect(r.body.message).not.toContain(before.secret);
    const after = await env();
    expect(after.secret).not.toBe(before.secret);
    expect(after.secret).toMatch(/^[0-9a-f]{48}$/);
    expect(after.enroll_secret_path).not.toBe(before.enroll_secret_path);
    expect(after.remove_secret_path).toBe(before.remove_secret_path);
    near(after.enroll_expire, Date.now() + 24 * HOUR);
    expect(await readSecret()).toBe(after.secret);
    const [audit] = await auditRows(ts, 7);
    expect(audit).toMatchObject({ username: 'prod-admin', env_uuid: after.uuid });
    expect(audit.line).toContain('rotated');
    expect(audit.line).not.toContain(after.secret);
  });

  it('only touches the environment in the path', async () => {
    const staging = await env('staging');
    await act('rotate');
    expect(await env('staging')).toEqual(staging);
  });
});

describe('update and the osctrl single-field actions', () => {
  it('update sets every field given: certificate and packages', async () => {
    const r = await act('update', {
      certificate: TEST_CERT,
      url_mac_pkg: 'https://pkgs.example.com/osquery-5.13.1.pkg',
      url_deb_pkg: 'osquery_5.13.1-1.linux_amd64.deb',
    });
    expectMessage(r);
    const e = await env();
    expect(e.certificate).toBe(TEST_CERT);
    expect(e.pkg_package).toBe('https://pkgs.example.com/osquery-5.13.1.pkg');
    expect(e.deb_package).toBe('osquery_5.13.1-1.linux_amd64.deb');
    expect(e.rpm_package).toBe('');
    const cert = await ts.call('GET', '/api/v1/environments/prod/enroll/cert', { token: tok.prodAdmin });
    expect(cert.body.data).toBe(TEST_CERT);
    const [audit] = await auditRows(ts, 7);
    expect(audit.line).toContain('url_mac_pkg=https://pkgs.example.com/osquery-5.13.1.pkg');
  });

  it.each([
    ['set_pkg', 'url_mac_pkg', 'pkg_package', 'https://pkgs.example.com/new.pkg'],
    ['set_msi', 'url_msi_pkg', 'msi_package', 'https://pkgs.example.com/osquery.msi'],
    ['set_deb', 'url_deb_pkg', 'deb_package', 'osquery.deb'],
    ['set_rpm', 'url_rpm_pkg', 'rpm_package', 'https://pkgs.example.com/osquery.rpm'],
  ])('%s sets %s', async (action, field, column, value) => {
    const r = await act(action, { [field]: value, certificate: 'ignored by single-field actions' });
    expectMessage(r);
    const e = await env();
    expect(e[column]).toBe(value);
    expect(e.certificate).toBe(TEST_CERT);
  });

  it('cert sets the certificate; an empty string clears it', async () => {
    expectMessage(await act('cert', { certificate: '' }));
    expect((await env()).certificate).toBe('');
    expectMessage(await act('cert', { certificate: TEST_CERT.replace(/\n/g, '\r\n') }));
    expect((await env()).certificate).toBe(TEST_CERT);
  });

  it('a single-field action without its field, or update with nothing to set, is 400', async () => {
    for (const [action, body] of [
      ['set_pkg', {}],
      ['cert', { url_mac_pkg: 'x.pkg' }],
      ['update', {}],
      ['update', undefined],
    ] as const) {
      const r = await act(action, body);
      expect(r.status, action).toBe(400);
      expect(r.body.code).toBe('bad_request');
    }
  });
});

describe('bad values change nothing', () => {
  const cases: [string, string, unknown][] = [
    ['an http:// package URL', 'update', { url_mac_pkg: 'http://pkgs.example.com/osquery.pkg' }],
    ['an ftp:// package URL', 'set_deb', { url_deb_pkg: 'ftp://pkgs.example.com/osquery.deb' }],
    ['a package path with directories', 'update', { url_rpm_pkg: 'pkgs/osquery.rpm' }],
    ['an absolute package path', 'set_msi', { url_msi_pkg: '/tmp/osquery.msi' }],
    ['a package name with a quote', 'update', { url_deb_pkg: "osquery'.deb" }],
    ['a URL without a host', 'update', { url_mac_pkg: 'https://' }],
    ['a certificate that is not PEM', 'cert', { certificate: 'hello' }],
    ['a PEM block that is not X.509', 'update', { certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }],
    [
      'a private key along with the certificate',
      'update',
      { certificate: `${TEST_CERT}-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END PRIVATE KEY-----\n` },
    ],
    ['text around the PEM', 'cert', { certificate: `subject=CN=x\n${TEST_CERT}` }],
    ['a certificate of the wrong JSON type', 'update', { certificate: 42 }],
    ['a package of the wrong JSON type', 'update', { url_mac_pkg: ['https://a.example/x.pkg'] }],
    ['one good field and one bad', 'update', { url_rpm_pkg: 'good.rpm', url_deb_pkg: 'http://bad.example/x.deb' }],
  ];
  it.each(cases)('rejects %s with 400', async (_, action, body) => {
    const before = await env();
    const r = await act(action, body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ code: 'bad_request', error: expect.any(String) });
    expect(await env()).toEqual(before);
  });

  it('rejects malformed JSON with 400 invalid_json', async () => {
    const before = await env();
    const r = await ts.call('POST', '/api/v1/environments/prod/enroll/update', { token: tok.prodAdmin, rawBody: '{"certificate": ' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_json');
    const proto = await ts.call('POST', '/api/v1/environments/prod/enroll/update', {
      token: tok.prodAdmin,
      rawBody: '{"__proto__": {"x": 1}, "url_deb_pkg": "a.deb"}',
    });
    expect(proto.status).toBe(400);
    expect(await env()).toEqual(before);
  });
});

describe('errors', () => {
  it('an unknown action is 400 invalid_action', async () => {
    const r = await act('renew');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_action');
    expect(r.body.error).toContain('extend');
  });

  it('is 401 without a token, 403 below env admin, 404 for an unknown env; nothing changes', async () => {
    const before = await env();
    const noTok = await ts.call('POST', '/api/v1/environments/prod/enroll/expire');
    expect(noTok.status).toBe(401);
    expect(noTok.body.code).toBe('unauthorized');
    for (const t of [tok.analyst, tok.querier, tok.devUser]) {
      const r = await act('rotate', undefined, { token: t });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    const other = await act('expire', undefined, { env: 'staging' });
    expect(other.status).toBe(403);
    const unknown = await act('expire', undefined, { env: 'nope', token: tok.admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    expect(await env()).toEqual(before);
  });

  it('a super-admin may act on any environment', async () => {
    expectMessage(await act('notexpire', undefined, { env: 'dev', token: tok.admin }));
    expect((await env('dev')).enroll_expire).toBe(NEVER);
  });
});
