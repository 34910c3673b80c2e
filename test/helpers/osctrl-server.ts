// A stand-in for osctrl-api 0.5.4, written from notes on its Go handlers (commit 3c1c5ab4): the
// same paths, wire shapes (PascalCase maps and settings, views without our fields), statuses and
// error bodies (`{"error"}` without code, Go's text 404/405 with a trailing newline), and the
// permission rules fleetctl meets. In memory, on 127.0.0.1; `requests` records what was sent so
// tests can assert that a refusal sent nothing and a write sent the right thing.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export const OSCTRL_PASSWORD = 'osctrl-pass-1';
const T0 = '2026-07-24T12:34:56.123456789Z';
const NEVER = '0001-01-01T00:00:00Z';

interface Access { user: boolean; query: boolean; carve: boolean; admin: boolean }
interface OUser { username: string; email: string; fullname: string; admin: boolean; service: boolean; password: string; token?: string; perms: Record<string, Access> }
interface OTag { id: number; name: string; description: string; color: string; icon: string; environment_id: number; tag_type: number; custom_tag: string; auto_tag: boolean; cohort: boolean; created_by: string; created_at: string; updated_at: string }

export interface Recorded { method: string; path: string; query: Record<string, string>; body: any }

const ENVS = [
  { ID: 1, Name: 'prod', UUID: 'A1B2C3D4-0000-4000-8000-000000000001' },
  { ID: 2, Name: 'dev', UUID: 'A1B2C3D4-0000-4000-8000-000000000002' },
];
const NO_ACCESS: Access = { user: false, query: false, carve: false, admin: false };

function makeNode(i: number, env: (typeof ENVS)[number]) {
  return {
    id: i, uuid: `NODE-${String(i).padStart(4, '0')}`, hostname: `host-${String(i).padStart(4, '0')}`, localname: `host-${i}`,
    ip_address: `10.0.0.${i}`, username: 'root', osquery_user: 'root', environment: env.Name, cpu: 'x86', memory: '8 GB',
    hardware_serial: `SER${i}`, daemon_hash: '', config_hash: '', bytes_received: 100 * i, raw_enrollment: '',
    last_seen: T0, user_id: 1, environment_id: env.ID, extra_data: '', platform: i % 2 ? 'ubuntu' : 'darwin',
    platform_version: '22.04', osquery_version: '5.12.1', created_at: T0, updated_at: T0,
  };
}

export class OsctrlStandIn {
  requests: Recorded[] = [];
  users = new Map<string, OUser>();
  nodes = [1, 2, 3].map((i) => makeNode(i, ENVS[0]!));
  tags: OTag[] = [];
  tagged: Array<{ uuid: string; tag: string; type: number }> = [];
  settings = [
    { ID: 3, CreatedAt: T0, UpdatedAt: T0, DeletedAt: null, Name: 'inactive_hours', Service: 'admin', EnvironmentID: 0, JSON: false, Type: 'integer', String: '', Boolean: false, Integer: 72, Info: '' },
    { ID: 4, CreatedAt: T0, UpdatedAt: T0, DeletedAt: null, Name: 'debug_http', Service: 'admin', EnvironmentID: 0, JSON: false, Type: 'boolean', String: '', Boolean: false, Integer: 0, Info: '' },
  ];
  envState = new Map(ENVS.map((e) => [e.UUID, { deb_package: '', rpm_package: '', msi_package: '', pkg_package: '', certificate: '', enroll_expire: NEVER }]));
  carves = [
    { id: 7, name: 'carve_0123456789abcdef0123456789abcdef', query: "SELECT * FROM carves WHERE carve=1 AND path = '/etc/hosts';", path: '/etc/hosts', type: 'carve', creator: 'admin', environment_id: 1, active: true, completed: false, deleted: false, expired: false, hidden: false, protected: false, expected: 1, executions: 0, errors: 0, expiration: NEVER, extra_data: '', target: '', created_at: T0, updated_at: T0 },
  ];
  audit = [
    { id: 2, created_at: T0, service: 'osctrl-api', username: 'admin', line: 'tag add', log_type: 6, severity: 1, source_ip: '127.0.0.1', environment_id: 1, env_uuid: ENVS[0]!.UUID },
    { id: 1, created_at: T0, service: 'osctrl-api', username: 'admin', line: 'login', log_type: 1, severity: 1, source_ip: '127.0.0.1', environment_id: 0 },
  ];
  private server = createServer((req, res) => void this.handle(req, res));
  url = '';

  constructor() {
    const all = Object.fromEntries(ENVS.map((e) => [e.UUID, { user: true, query: true, carve: true, admin: true }]));
    this.users.set('admin', { username: 'admin', email: 'admin@example.com', fullname: 'Admin', admin: true, service: false, password: OSCTRL_PASSWORD, perms: all });
    this.users.set('bob', { username: 'bob', email: 'bob@example.com', fullname: 'Bob', admin: false, service: false, password: OSCTRL_PASSWORD, perms: { [ENVS[1]!.UUID]: { user: true, query: false, carve: false, admin: false } } });
    this.tags.push({ id: 1, name: 'prod', description: 'Tag for environment prod', color: '#aa0000', icon: 'fas fa-tag', environment_id: 1, tag_type: 0, custom_tag: 'env', auto_tag: false, cohort: true, created_by: 'admin', created_at: T0, updated_at: T0 });
    this.tags.push({ id: 2, name: 'web', description: 'web servers', color: '#00aa00', icon: 'fas fa-tag', environment_id: 1, tag_type: 6, custom_tag: 'tag', auto_tag: false, cohort: true, created_by: 'admin', created_at: T0, updated_at: T0 });
  }

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  /** Requests after the anonymous flavour probe and the login (what a command sent). */
  sent(since = 0): Recorded[] {
    return this.requests.slice(since);
  }

  private env(ref: string) {
    return ENVS.find((e) => e.Name === ref || e.UUID === ref);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://x');
    let raw = '';
    for await (const c of req) raw += c;
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: u.pathname, query: Object.fromEntries(u.searchParams), body });
    const json = (status: number, v: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify(v));
    };
    const err = (status: number, msg: string) => json(status, { error: msg });
    const text = (status: number, t: string) => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end(t);
    };
    const route = (m: string, pattern: string): Record<string, string> | undefined => {
      if (m !== method) return undefined;
      const re = new RegExp(`^${pattern.replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}$`);
      const hit = re.exec(u.pathname);
      return hit ? Object.fromEntries(Object.entries(hit.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)])) : undefined;
    };
    let p: Record<string, string> | undefined;

    // Unauthenticated routes.
    if (route('GET', '/api/v1/login/environments')) return json(200, ENVS.map((e) => ({ uuid: e.UUID, name: e.Name })));
    if (route('GET', '/api/v1/auth/methods')) return json(200, { methods: [{ type: 'password', loginUrl: '/api/v1/login' }] });
    if ((p = route('POST', '/api/v1/login/{env}')) || (p = route('POST', '/api/v1/login'))) {
      if (!body || typeof body !== 'object') return err(500, 'error parsing POST body');
      const user = this.users.get(body.username);
      if (!user || !body.password || user.password !== body.password) return err(403, 'invalid credentials');
      if (p.env !== undefined) {
        const e = this.env(p.env);
        if (!e) return err(404, 'environment not found');
        if (!user.admin && !user.perms[e.UUID]?.admin) return err(403, 'no access');
      }
      const claims = Buffer.from(JSON.stringify({ username: user.username, iss: 'osctrl-api', exp: Math.floor(Date.now() / 1000) + 3 * 3600, jti: randomBytes(16).toString('hex') })).toString('base64url');
      user.token = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${claims}.sig`;
      return json(200, { token: user.token, csrf_token: randomBytes(16).toString('hex') });
    }

    const auth = /^Bearer(.*)$/.exec(req.headers.authorization ?? '')?.[1]?.trim();
    const me = [...this.users.values()].find((x) => x.token && x.token === auth);
    if (!me) {
      if (u.pathname.startsWith('/api/v1/')) return json(401, { error: 'unauthorized', code: 'unauthorized' });
      return text(404, '404 page not found\n');
    }
    const level = (uuid: string, l: keyof Access) => me.admin || Boolean(me.perms[uuid]?.[l]) || (l !== 'admin' && Boolean(me.perms[uuid]?.admin));

    if ((p = route('GET', '/api/v1/environments/map/{target}'))) {
      if (!['id', 'uuid', 'name'].includes(p.target!)) return err(400, 'invalid target');
      if (!me.admin) return err(403, 'no access');
      if (p.target === 'id') return json(200, Object.fromEntries(ENVS.map((e) => [String(e.ID), e])));
      return json(200, Object.fromEntries(ENVS.flatMap((e) => [[e.Name, e], [e.UUID, e]])));
    }
    if ((p = route('GET', '/api/v1/environments/{env}'))) {
      const e = this.env(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!level(e.UUID, 'user')) return err(403, 'no access');
      const st = this.envState.get(e.UUID)!;
      const view = { id: e.ID, uuid: e.UUID, name: e.Name, hostname: 'osctrl.example.com', type: 'osquery', config_interval: 10, log_interval: 10, query_interval: 10, accept_enrolls: true, enroll_expire: st.enroll_expire, remove_expire: NEVER, created_at: T0, updated_at: T0 };
      return json(200, level(e.UUID, 'admin') ? { ...view, secret: 'enroll-secret', certificate: st.certificate, flags: '--tls', deb_package: st.deb_package, rpm_package: st.rpm_package, msi_package: st.msi_package, pkg_package: st.pkg_package } : view);
    }
    if ((p = route('POST', '/api/v1/environments/{env}/enroll/cert'))) {
      const e = this.env(p.env!)!;
      const pem = Buffer.from(String(body?.certificate_b64 ?? ''), 'base64').toString();
      if (!pem.includes('BEGIN CERTIFICATE')) return err(400, 'invalid PEM: no CERTIFICATE block');
      this.envState.get(e.UUID)!.certificate = pem;
      return json(200, { message: 'certificate uploaded successfully' });
    }
    if ((p = route('POST', '/api/v1/environments/{env}/enroll/{action}'))) {
      const e = this.env(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!level(e.UUID, 'admin')) return err(403, 'no access');
      if (!body || typeof body !== 'object') return err(500, 'error parsing POST body');
      const st = this.envState.get(e.UUID)!;
      const set: Record<string, [keyof typeof st, string, string]> = {
        set_deb: ['deb_package', 'url_deb_pkg', 'DEB'], set_rpm: ['rpm_package', 'url_rpm_pkg', 'RPM'], set_msi: ['msi_package', 'url_msi_pkg', 'MSI'], set_pkg: ['pkg_package', 'url_mac_pkg', 'PKG'],
      };
      const s = set[p.action!];
      if (s) {
        st[s[0]] = String(body[s[1]] ?? '');
        return json(200, { message: `${s[2]} updated successfully` });
      }
      const msgs: Record<string, string> = { extend: 'enrollment extended successfully', expire: 'enrollment expired successfully', rotate: 'enrollment rotated successfully', notexpire: 'enrollment set to not expire' };
      if (!msgs[p.action!]) return err(400, 'invalid action');
      if (p.action === 'notexpire') st.enroll_expire = NEVER;
      return json(200, { message: msgs[p.action!] });
    }
    if ((p = route('GET', '/api/v1/environments/{env}/enroll/{target}'))) {
      const targets = ['secret', 'cert', 'flags', 'flagsLinux', 'flagsMac', 'flagsWindows', 'flagsFreeBSD', 'enroll.sh', 'enroll.ps1'];
      if (!targets.includes(p.target!)) return err(400, 'invalid target');
      return json(200, { data: p.target === 'secret' ? 'enroll-secret' : `#!/bin/sh\n# ${p.target}\n` });
    }
    if ((p = route('GET', '/api/v1/environments/{env}/remove/{target}'))) {
      if (!['remove.sh', 'remove.ps1'].includes(p.target!)) return err(400, 'invalid target');
      return json(200, { data: `#!/bin/sh\n# ${p.target} for ${p.env}\n` });
    }

    if (route('GET', '/api/v1/users')) {
      if (!me.admin) return err(403, 'no access');
      return json(200, [...this.users.values()].map((x, i) => ({ id: i + 1, created_at: T0, updated_at: T0, username: x.username, email: x.email, fullname: x.fullname, admin: x.admin, service: x.service, uuid: `U-${i}`, token_expire: T0, environment_id: 0, auth_source: 'local' })));
    }
    if (route('GET', '/api/v1/users/me')) {
      return json(200, { username: me.username, email: me.email, fullname: me.fullname, admin: me.admin, service: me.service, uuid: 'U-me', token_expire: T0, last_access: T0, permissions: me.perms });
    }
    if ((p = route('GET', '/api/v1/users/{username}/permissions'))) {
      if (!me.admin) return err(403, 'no access');
      const x = this.users.get(p.username!);
      if (!x) return err(404, 'user not found');
      return json(200, { username: x.username, permissions: x.perms });
    }
    if ((p = route('POST', '/api/v1/users/{username}/permissions'))) {
      if (!me.admin) return err(403, 'no access');
      const x = this.users.get(p.username!);
      if (!x) return err(404, 'user not found');
      if (!body?.env_uuid) return err(400, 'env_uuid is required');
      if (!ENVS.some((e) => e.UUID === body.env_uuid)) return err(404, 'environment not found');
      x.perms[body.env_uuid] = { ...NO_ACCESS, ...body.access };
      return json(200, { username: x.username, permissions: x.perms });
    }
    if ((p = route('POST', '/api/v1/users/{username}/{action}'))) {
      if (!me.admin) return err(403, 'no access');
      if (!body || typeof body !== 'object') return err(500, 'error parsing POST body');
      if (body.username !== p.username) return err(400, 'error with username');
      const x = this.users.get(p.username!);
      if (p.action === 'add') {
        if (x) return err(500, 'error adding user');
        const envs: string[] = body.admin ? ENVS.map((e) => e.UUID) : (body.environments ?? []);
        const acc: Access = { user: body.user_access ?? true, query: body.query_access ?? Boolean(body.admin), carve: body.carve_access ?? Boolean(body.admin), admin: body.admin_access ?? Boolean(body.admin) };
        this.users.set(p.username!, { username: p.username!, email: body.email ?? '', fullname: body.fullname ?? '', admin: Boolean(body.admin), service: Boolean(body.service), password: body.password ?? '', perms: Object.fromEntries(envs.map((v) => [v, acc])) });
        return json(200, { data: 'user added successfully' });
      }
      if (p.action === 'edit') {
        if (!x) return err(400, 'user does not exist');
        if (body.email) x.email = body.email;
        if (body.fullname) x.fullname = body.fullname;
        if (body.password) x.password = body.password;
        if (body.admin) x.admin = true;
        else if (body.not_admin) x.admin = false;
        return json(200, { data: 'user updated successfully' });
      }
      if (p.action === 'remove') {
        if (p.username === me.username) return err(400, 'error removing user');
        this.users.delete(p.username!);
        return json(200, { data: 'user removed successfully' });
      }
      return json(200, { data: '' });
    }
    if (route('POST', '/api/v1/users/me/password')) {
      if (body?.current_password !== me.password) return err(403, 'invalid credentials');
      me.password = body.new_password;
      return json(200, { message: 'password changed successfully' });
    }

    if ((p = route('GET', '/api/v1/nodes/{env}/node/{node}'))) {
      const n = this.nodes.find((x) => x.uuid === p!.node || x.hostname === p!.node || x.localname === p!.node);
      return n ? json(200, n) : err(404, 'node not found');
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/delete'))) {
      const i = this.nodes.findIndex((x) => x.uuid === body?.uuid);
      if (i < 0) return err(404, 'node not found');
      this.nodes.splice(i, 1);
      return json(200, { message: 'node deleted successfully' });
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/tag'))) {
      if (!body?.uuid || !body?.tag) return err(400, 'uuid and tag are required');
      if (!this.nodes.some((x) => x.uuid === body.uuid)) return err(404, 'node not found');
      if (this.tagged.some((t) => t.uuid === body.uuid && t.tag === body.tag)) return err(500, 'error tagging node');
      this.tagged.push({ uuid: body.uuid, tag: body.tag, type: body.type });
      return json(200, { message: 'node tagged' });
    }
    if ((p = route('GET', '/api/v1/nodes/{env}'))) {
      const e = this.env(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!level(e.UUID, 'user')) return err(403, 'no access');
      const q = u.searchParams;
      const dir = q.get('dir') === 'asc' ? 1 : q.get('dir') === 'desc' ? -1 : q.get('sort') ? 1 : -1;
      const list = this.nodes.filter((n) => n.environment_id === e.ID).sort((a, b) => (q.get('sort') === 'hostname' ? a.hostname.localeCompare(b.hostname) * dir : (a.id - b.id) * dir));
      const page = Math.max(1, Number(q.get('page')) || 1);
      const size = Math.min(500, Number(q.get('page_size')) || 50);
      return json(200, { items: list.slice((page - 1) * size, page * size), page, page_size: size, total_items: list.length, total_pages: Math.max(1, Math.ceil(list.length / size)) });
    }

    if ((p = route('GET', '/api/v1/tags/{env}'))) {
      const e = this.env(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!level(e.UUID, 'admin')) return err(403, 'no access');
      return json(200, this.tags.filter((t) => t.environment_id === e.ID));
    }
    if ((p = route('POST', '/api/v1/tags/{env}/{action}'))) {
      const e = this.env(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!level(e.UUID, 'admin')) return err(403, 'no access');
      if (!body?.name) return err(400, 'tag name can not be empty');
      const t = this.tags.find((x) => x.name === body.name && x.environment_id === e.ID);
      const custom = (n: number) => ({ 0: 'env', 2: 'platform', 4: String(body.custom ?? ''), 5: 'unknown', 6: 'tag' })[n] ?? 'tag';
      if (p.action === 'add') {
        if (t) return err(409, 'tag with that name already exists in this environment');
        const type = Number(body.tagtype ?? 0);
        this.tags.push({ id: this.tags.length + 1, name: body.name, description: body.description ?? '', color: body.color || '#123456', icon: body.icon || 'fas fa-tag', environment_id: e.ID, tag_type: type, custom_tag: custom(type), auto_tag: false, cohort: ![4, 5].includes(type), created_by: me.username, created_at: T0, updated_at: T0 });
        return json(200, { data: 'tag added successfully' });
      }
      if (p.action === 'edit') {
        if (!t) return err(404, 'tag not found');
        if (body.description) t.description = body.description;
        if (body.color) t.color = body.color;
        const type = Number(body.tagtype ?? 0); // osctrl: an omitted tagtype is 0 and replaces the stored one
        if (type !== t.tag_type) {
          t.tag_type = type;
          t.custom_tag = custom(type);
        }
        return json(200, { data: 'tag updated successfully' });
      }
      if (p.action === 'remove') {
        if (!t) return err(404, 'tag not found');
        this.tags.splice(this.tags.indexOf(t), 1);
        return json(200, { data: 'tag removed successfully' });
      }
      return err(400, 'invalid action');
    }

    if ((p = route('GET', '/api/v1/settings/{service}'))) {
      if (!me.admin) return err(403, 'no access');
      return json(200, this.settings.filter((s) => s.Service === p!.service && s.EnvironmentID === 0));
    }
    if ((p = route('GET', '/api/v1/settings/{service}/{env}'))) {
      if (!me.admin) return err(403, 'no access');
      const e = this.env(p.env!);
      return json(200, this.settings.filter((s) => s.Service === p!.service && s.EnvironmentID === e?.ID)); // the env's own rows only
    }
    if ((p = route('PATCH', '/api/v1/settings/{service}/{name}'))) {
      if (!me.admin) return err(403, 'no access');
      const s = this.settings.find((x) => x.Service === p!.service && x.Name === p!.name && x.EnvironmentID === 0);
      if (!s) return err(404, 'setting not found');
      if (s.Type === 'integer') s.Integer = body.integer;
      if (s.Type === 'boolean') s.Boolean = body.boolean;
      if (s.Type === 'string') s.String = body.string;
      return json(200, s);
    }

    if ((p = route('GET', '/api/v1/carves/{env}'))) {
      const target = u.searchParams.get('target') ?? 'all';
      const ok = ['all', 'all-full', 'active', 'completed', 'expired', 'saved', 'hidden-completed', 'deleted', 'hidden'];
      if (!ok.includes(target)) return err(400, 'invalid target');
      const list = this.carves.filter((c) => target === 'all' || (target === 'active' ? c.active : target === 'completed' ? c.completed : target === 'deleted' ? c.deleted : target === 'expired' ? c.expired : false));
      return json(200, { items: list.map((c) => ({ ...c, carve_status: c.deleted ? 'DELETED' : c.completed ? 'COMPLETED' : 'ACTIVE' })), page: 1, page_size: 50, total_items: list.length, total_pages: list.length ? 1 : 0 });
    }
    if ((p = route('GET', '/api/v1/carves/{env}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return err(404, 'carve not found');
      return json(200, { query: { ...c, targets: [{ type: 'environment', value: 'prod' }] }, files: [] });
    }
    if ((p = route('POST', '/api/v1/carves/{env}/{action}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return err(404, 'carve not found');
      if (p.action === 'delete') c.deleted = true;
      else if (p.action === 'expire') c.expired = true;
      else if (p.action === 'complete') c.completed = true;
      else return err(400, 'invalid action');
      c.active = false;
      return json(200, { message: `carve ${c.name} ${p.action}d successfully`.replace('ed successfully', 'ed successfully') });
    }

    if (route('GET', '/api/v1/audit-logs')) {
      const envUuid = u.searchParams.get('env_uuid');
      if (envUuid && !ENVS.some((e) => e.UUID === envUuid)) return err(400, 'env_uuid not found');
      const list = this.audit.filter((a) => (!envUuid || a.env_uuid === envUuid) && (me.admin || a.username.includes(me.username)));
      return json(200, { items: list, page: 1, page_size: 50, total_items: list.length, total_pages: list.length ? 1 : 0 });
    }
    if (route('GET', '/api/v1/stats')) {
      const pc = { linux: 2, darwin: 1, windows: 0, other: 0 };
      return json(200, { total_nodes: 3, active_nodes: 3, inactive_nodes: 0, inactive_hours: 72, total_active_queries: 0, total_active_carves: 1, platform_counts: pc, environments: [{ uuid: ENVS[0]!.UUID, name: 'prod', active: 3, inactive: 0, total: 3, active_queries: 0, active_carves: 1, platform_counts: pc }] });
    }
    // Go 1.22 ServeMux with `GET /` registered: unknown GETs 404, other methods 405.
    if (method === 'GET') return text(404, '404 page not found\n');
    return text(405, 'Method Not Allowed\n');
  }
}
