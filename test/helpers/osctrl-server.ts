// A stand-in for osctrl-api 0.5.4 that answers from wire data recorded against the real thing
// (test/fixtures/osctrl/recorded.json: osctrl-api, osctrl-tls and osctrl-cli built at commit
// 3c1c5ab4, agents enrolled through osctrl-tls, docs/osctrl.md says how). Every answer body is
// a recorded one, or built from recorded records (nodes with osctrl's omitted empty fields, user
// views, permission maps, tags without counts, query records, results as osctrl stores them,
// a carve and its archive). The rules are the real server's, as observed: a permission check that
// stops at the first row of the level asked (so `user: false` locks an env admin out), logout
// that ends only a session sent as the `osctrl_token` cookie, a query stored with a zero expiry
// that no agent ever receives, 200 with an empty record for an unknown query or an unknown action,
// 500 for tagging a node twice, substring user matches in the audit log, target kinds intersected,
// platform names matched exactly, 10 logins a minute. So tests fail the way the real server would.
// In memory, on 127.0.0.1; `requests` records what was sent.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { answer } from '../../src/agent-sim/tables.js';
import { platformBucket } from '../../src/lib/platforms.js';

export const OSCTRL_PASSWORD = 'osctrl-pass-1';
const NEVER = '0001-01-01T00:00:00Z';

interface Exchange { method: string; route: string; path: string; query: string; request: any; status: number; content_type: string; body: any }
export const RECORDED: Record<string, Exchange> = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/osctrl/recorded.json'), 'utf8')).exchanges;
/** A recorded answer body (a copy): `key` is "METHOD route status" as in the fixture. */
export function rec<T = any>(key: string): T {
  const x = RECORDED[key];
  if (!x) throw new Error(`no recorded exchange ${key}`);
  return structuredClone(x.body) as T;
}

export interface Recorded { method: string; path: string; query: Record<string, string>; body: any; cookie?: string }
type Level = 'admin' | 'query' | 'carve' | 'user';
/** osctrl's access types, in its order: AdminLevel 0, QueryLevel 1, CarveLevel 2, UserLevel 3. */
const LEVEL_TYPE: Record<Level, number> = { admin: 0, query: 1, carve: 2, user: 3 };
interface Row { type: number; value: boolean; env: string }
interface OUser { view: any; password: string; token?: string; rows: Row[] }

const MAP = rec<Record<string, { ID: number; Name: string; UUID: string }>>('GET /api/v1/environments/map/id 200');
export const ENVS = Object.values(MAP).sort((a, b) => a.ID - b.ID);
export const PROD = ENVS.find((e) => e.Name === 'prod')!.UUID;
export const DEV = ENVS.find((e) => e.Name === 'dev')!.UUID;

export class OsctrlStandIn {
  requests: Recorded[] = [];
  users = new Map<string, OUser>();
  nodes: any[] = rec<{ items: any[] }>('GET /api/v1/nodes/prod 200').items;
  devNodes: any[] = rec<{ items: any[] }>('GET /api/v1/nodes/dev 200').items;
  tags: any[] = rec<any[]>('GET /api/v1/tags/prod 200');
  tagged: Array<{ uuid: string; tag: string }> = [];
  settings: any[] = [...rec<any[]>('GET /api/v1/settings/admin 200'), ...rec<any[]>('GET /api/v1/settings/tls 200')];
  envViews = new Map<string, Record<string, any>>(ENVS.map((e) => [e.UUID, { ...rec<Record<string, any>>('GET /api/v1/environments/prod 200'), id: e.ID, uuid: e.UUID, name: e.Name }]));
  queries: any[] = [];
  results: any[] = [];
  carves: any[] = [];
  carveFiles = new Map<string, any[]>();
  audit: any[] = rec<{ items: any[] }>('GET /api/v1/audit-logs 200').items;
  private loginTimes: number[] = [];
  private nextId = 1000;
  private server = createServer((req, res) =>
    void this.handle(req, res).catch((e: Error) => {
      // A stand-in bug must fail the test loudly, not hang the CLI until its timeout.
      console.error('osctrl stand-in:', e.stack);
      if (!res.headersSent) res.writeHead(599);
      res.end(`stand-in error: ${e.message}`);
    }));
  url = '';

  constructor() {
    for (const u of rec<any[]>('GET /api/v1/users 200')) {
      const key = `GET /api/v1/users/${u.username}/permissions 200`;
      const perms: Record<string, Record<Level, boolean>> = RECORDED[key] ? rec(key).permissions : {};
      // osctrl's rows per env: user, admin, query, carve (user add), as the permissions endpoint reads them.
      const rows = Object.entries(perms).flatMap(([env, a]) => (['user', 'admin', 'query', 'carve'] as Level[]).map((l) => ({ type: LEVEL_TYPE[l], value: a[l], env })));
      this.users.set(u.username, { view: u, password: OSCTRL_PASSWORD, rows });
    }
    const carve = rec('GET /api/v1/carves/prod/{carve} 200');
    this.carves.push({ ...carve.query, active: true, completed: false, deleted: false, expired: false });
    this.carveFiles.set(carve.query.name, carve.files);
    this.queries = rec<{ items: any[] }>('GET /api/v1/queries/prod/list/all-full 200').items;
    this.results = rec<{ items: any[] }>('GET /api/v1/queries/prod/results/{query} 200').items;
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

  sent(since = 0): Recorded[] {
    return this.requests.slice(since);
  }

  /** The user's rows for an env, as osctrl stores them (tests read and plant them). */
  rowsOf(username: string, env: string): Record<Level, boolean> {
    const out = { admin: false, query: false, carve: false, user: false } as Record<Level, boolean>;
    for (const r of this.users.get(username)?.rows ?? []) if (r.env === env) out[(Object.keys(LEVEL_TYPE) as Level[]).find((l) => LEVEL_TYPE[l] === r.type)!] = r.value;
    return out;
  }

  /** osctrl's CheckPermissions: super-admin; any user for user level without env; else the env's rows in order. */
  can(username: string, level: Level, env: string): boolean {
    const u = this.users.get(username);
    if (!u) return false;
    if (u.view.admin) return true;
    if (env === '' && level === 'user') return true;
    for (const r of u.rows.filter((x) => x.env === env)) {
      if (r.type === LEVEL_TYPE.admin && r.value) return true;
      if (r.type === LEVEL_TYPE[level]) return r.value;
    }
    return false;
  }

  /** What osctrl-tls and its agents do: active, unexpired queries are answered by the env's nodes. */
  private deliver(now = Date.now()): void {
    for (const q of this.queries) {
      if (!q.active || q.expired || q.deleted || q.completed || Date.parse(q.expiration) <= now) continue;
      for (const uuid of (q._targets ?? []) as string[]) {
        if (this.results.some((r) => r.name === q.name && r.uuid === uuid)) continue;
        const node = this.nodes.find((n) => n.uuid === uuid)!;
        const host = { uuid, hostname: node.hostname, platform: node.platform, platformType: '9', osVersion: { name: node.system_info?.os?.name ?? '', platform: node.platform, version: node.platform_version }, systemInfo: { hostname: node.hostname, cpu_brand: node.cpu }, osqueryInfo: { version: node.osquery_version }, platformInfo: {}, startTime: 0 } as any;
        const a = answer(q.query, host, now);
        const status = a.kind === 'error' ? 1 : 0;
        const rows = a.kind === 'rows' ? a.rows : [];
        this.results.push({ created_at: new Date(now).toISOString(), data: JSON.stringify({ name: q.name, result: rows, status, message: a.kind === 'error' ? a.message : '' }), environment: 'prod', id: this.nextId++, name: q.name, status, uuid });
        if (status) q.errors++;
        else q.executions++;
      }
      if (q.executions + q.errors >= q.expected) {
        q.active = false;
        q.completed = true;
      }
    }
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
    this.requests.push({ method, path: u.pathname, query: Object.fromEntries(u.searchParams), body, cookie: req.headers.cookie });
    const json = (status: number, v: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify(v));
    };
    const err = (status: number, msg: string) => json(status, { error: msg });
    const text = (status: number, t: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', ...headers });
      res.end(t);
    };
    const route = (m: string, pattern: string): Record<string, string> | undefined => {
      if (m !== method) return undefined;
      const re = new RegExp(`^${pattern.replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}$`);
      const hit = re.exec(u.pathname);
      return hit ? Object.fromEntries(Object.entries(hit.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)])) : undefined;
    };
    const envOf = (ref: string) => ENVS.find((e) => e.Name === ref || e.UUID === ref);
    let p: Record<string, string> | undefined;

    // Unauthenticated routes.
    if (route('GET', '/api/v1/login/environments')) return json(200, rec('GET /api/v1/login/environments 200'));
    if (route('GET', '/api/v1/auth/methods')) return json(200, rec('GET /api/v1/auth/methods 200'));
    if ((p = route('POST', '/api/v1/login/{env}')) || (p = route('POST', '/api/v1/login'))) {
      const now = Date.now();
      this.loginTimes = this.loginTimes.filter((t) => t > now - 60_000);
      if (this.loginTimes.length >= 10) return text(429, rec('POST /api/v1/login 429'), { 'retry-after': '60' });
      this.loginTimes.push(now);
      const user = this.users.get(body?.username);
      if (!user || !body?.password || user.password !== body.password) return json(403, rec('POST /api/v1/login 403'));
      if (p.env !== undefined) {
        const e = envOf(p.env);
        if (!e) return err(404, 'environment not found');
        if (!this.can(body.username, 'admin', e.UUID)) return json(403, rec('POST /api/v1/login/prod 403'));
      }
      const claims = Buffer.from(JSON.stringify({ username: body.username, iss: 'osctrl-api', exp: Math.floor(now / 1000) + 3 * 3600, jti: randomBytes(16).toString('hex') })).toString('base64url');
      user.token = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${claims}.sig`;
      return json(200, { token: user.token, csrf_token: randomBytes(16).toString('hex') });
    }
    if (route('POST', '/api/v1/logout')) {
      // Only the cookie counts: a Bearer header on a logout ends nothing.
      const cookie = /(?:^|;\s*)osctrl_token=([^;]*)/.exec(req.headers.cookie ?? '')?.[1];
      const owner = cookie ? [...this.users.values()].find((x) => x.token && x.token === cookie) : undefined;
      if (owner) owner.token = undefined;
      return json(200, rec('POST /api/v1/logout 200'));
    }

    const auth = /^Bearer(.*)$/.exec(req.headers.authorization ?? '')?.[1]?.trim();
    const meEntry = [...this.users.entries()].find(([, x]) => x.token && x.token === auth);
    if (!meEntry) {
      if (u.pathname.startsWith('/api/v1/')) return json(401, rec('GET /api/v1/users/me 401'));
      return text(404, rec('GET /api/v1/nope 404'));
    }
    const [me, meUser] = meEntry;
    const noAccess = () => json(403, rec('GET /api/v1/users 403'));
    const can = (l: Level, env: string) => this.can(me, l, env);

    if ((p = route('GET', '/api/v1/environments/map/{target}'))) {
      if (!can('admin', '')) return noAccess();
      if (p.target === 'id') return json(200, MAP);
      return json(200, Object.fromEntries(ENVS.flatMap((e) => [[e.Name, e], [e.UUID, e]])));
    }
    if ((p = route('GET', '/api/v1/environments/{env}'))) {
      const e = envOf(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!can('user', e.UUID)) return noAccess();
      const v: Record<string, any> = { ...this.envViews.get(e.UUID) };
      if (!can('admin', e.UUID)) for (const k of ['secret', 'certificate', 'flags', 'enroll_secret_path', 'remove_secret_path']) delete v[k];
      return json(200, v);
    }
    if ((p = route('POST', '/api/v1/environments/{env}/enroll/{action}'))) {
      const e = envOf(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!can('admin', e.UUID)) return noAccess();
      const key = `POST /api/v1/environments/dev/enroll/${p.action} 200`;
      if (!RECORDED[key]) return err(400, 'invalid action');
      if (p.action === 'set_deb') this.envViews.get(e.UUID)!.deb_package = body?.url_deb_pkg ?? '';
      return json(200, rec(key));
    }
    if ((p = route('GET', '/api/v1/environments/{env}/enroll/{target}')) || (p = route('GET', '/api/v1/environments/{env}/remove/{target}'))) {
      const e = envOf(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!can('admin', e.UUID)) return json(403, rec('GET /api/v1/environments/prod/enroll/secret 403'));
      const kind = u.pathname.includes('/remove/') ? 'remove' : 'enroll';
      const key = `GET /api/v1/environments/dev/${kind}/${p.target} 200`;
      return RECORDED[key] ? json(200, rec(key)) : err(400, 'invalid target');
    }
    if ((p = route('PATCH', '/api/v1/environments/intervals/{env}'))) {
      const e = envOf(p.env!)!;
      if (!can('admin', e.UUID)) return noAccess();
      const v = this.envViews.get(e.UUID)!;
      for (const k of ['config_interval', 'log_interval', 'query_interval']) if (typeof body?.[k] === 'number') v[k] = body[k];
      return json(200, v);
    }

    if (route('GET', '/api/v1/users')) return can('admin', '') ? json(200, [...this.users.values()].map((x) => x.view)) : noAccess();
    if (route('GET', '/api/v1/users/me')) {
      const perms: Record<string, Record<Level, boolean>> = {};
      for (const r of meUser.rows) perms[r.env] = this.rowsOf(me, r.env);
      return json(200, { ...rec<Record<string, any>>('GET /api/v1/users/me 200'), ...meUser.view, permissions: perms });
    }
    if ((p = route('GET', '/api/v1/users/{username}/permissions'))) {
      if (!can('admin', '')) return noAccess();
      const x = this.users.get(p.username!);
      if (!x) return err(404, 'user not found');
      const perms: Record<string, Record<Level, boolean>> = {};
      for (const r of x.rows) perms[r.env] = this.rowsOf(p.username!, r.env);
      return json(200, { username: p.username, permissions: perms });
    }
    if ((p = route('POST', '/api/v1/users/{username}/permissions'))) {
      if (!can('admin', '')) return noAccess();
      const x = this.users.get(p.username!);
      if (!x) return err(404, 'user not found');
      // ChangeAccess: user, query, carve, admin, each row updated in place or appended.
      for (const l of ['user', 'query', 'carve', 'admin'] as Level[]) {
        const row = x.rows.find((r) => r.env === body.env_uuid && r.type === LEVEL_TYPE[l]);
        if (row) row.value = Boolean(body.access?.[l]);
        else x.rows.push({ env: body.env_uuid, type: LEVEL_TYPE[l], value: Boolean(body.access?.[l]) });
      }
      return json(200, { username: p.username, permissions: Object.fromEntries([...new Set(x.rows.map((r) => r.env))].map((env) => [env, this.rowsOf(p!.username!, env)])) });
    }
    if (route('POST', '/api/v1/users/me/password')) {
      if (body?.current_password !== meUser.password) return err(403, 'invalid credentials');
      meUser.password = body.new_password;
      return json(200, rec('POST /api/v1/users/me/password 200'));
    }
    if ((p = route('POST', '/api/v1/users/{username}/{action}'))) {
      if (!can('admin', '')) return noAccess();
      if (body?.username !== p.username) return err(400, 'error with username');
      const x = this.users.get(p.username!);
      if (p.action === 'add') {
        if (x) return err(500, 'error adding user');
        const envs: string[] = body.admin ? ENVS.map((e) => e.UUID) : (body.environments ?? []);
        const a: Record<Level, boolean> = { user: body.user_access ?? true, query: body.query_access ?? Boolean(body.admin), carve: body.carve_access ?? Boolean(body.admin), admin: body.admin_access ?? Boolean(body.admin) };
        const rows = envs.flatMap((env) => (['user', 'admin', 'query', 'carve'] as Level[]).map((l) => ({ env, type: LEVEL_TYPE[l], value: a[l] })));
        this.users.set(p.username!, { view: { ...rec<any[]>('GET /api/v1/users 200')[0], id: this.nextId++, username: p.username, email: body.email ?? '', fullname: body.fullname ?? '', admin: Boolean(body.admin), service: Boolean(body.service) }, password: body.password ?? '', rows });
        return json(200, rec('POST /api/v1/users/{user}/add 200'));
      }
      if (p.action === 'edit') {
        if (!x) return err(400, 'user does not exist');
        if (body.fullname) x.view.fullname = body.fullname;
        if (body.email) x.view.email = body.email;
        if (body.password) x.password = body.password;
        return json(200, rec('POST /api/v1/users/{user}/edit 200'));
      }
      if (p.action === 'remove') {
        this.users.delete(p.username!); // a missing user is "removed" too
        return json(200, rec('POST /api/v1/users/{user}/remove 200'));
      }
      return err(400, 'invalid action');
    }

    if ((p = route('GET', '/api/v1/nodes/{env}'))) {
      const e = envOf(p.env!);
      if (!e) return err(404, 'environment not found');
      if (!can('user', e.UUID)) return noAccess();
      const q = (u.searchParams.get('q') ?? '').toLowerCase();
      const bucket = u.searchParams.get('platform') ?? '';
      let items = (e.UUID === PROD ? this.nodes : this.devNodes).filter((n) => (!q || [n.hostname, n.uuid, n.localname, n.ip_address, n.platform].some((v: string) => v.toLowerCase().includes(q))) && (!bucket || platformBucket(n.platform) === bucket));
      const sort = u.searchParams.get('sort') ?? 'lastseen';
      const key = sort === 'hostname' ? 'hostname' : 'last_seen';
      const desc = u.searchParams.get('dir') ? u.searchParams.get('dir') === 'desc' : key === 'last_seen';
      items = [...items].sort((a, b) => String(a[key]).localeCompare(String(b[key])) * (desc ? -1 : 1));
      const size = Math.min(500, Number(u.searchParams.get('page_size')) || 50);
      const page = Math.max(1, Number(u.searchParams.get('page')) || 1);
      return json(200, { items: items.slice((page - 1) * size, page * size), page, page_size: size, total_items: items.length, total_pages: Math.max(1, Math.ceil(items.length / size)) });
    }
    if ((p = route('GET', '/api/v1/nodes/{env}/node/{node}'))) {
      const n = this.nodes.find((x) => [x.uuid, x.hostname, x.localname].includes(p!.node));
      if (!n) return json(404, rec('GET /api/v1/nodes/prod/node/{node} 404'));
      return json(200, can('admin', PROD) ? { ...n, node_key: 'REDACTED-NODE_KEY' } : n);
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/delete'))) {
      if (!can('admin', PROD)) return noAccess();
      const i = this.nodes.findIndex((x) => x.uuid === body?.uuid);
      if (i < 0) return err(404, 'node not found');
      this.nodes.splice(i, 1);
      return json(200, rec('POST /api/v1/nodes/prod/delete 200'));
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/tag'))) {
      if (!can('admin', PROD)) return noAccess();
      const n = this.nodes.find((x) => x.uuid === body?.uuid);
      if (!n) return err(404, 'node not found');
      if (!this.tags.some((t) => t.name === body.tag)) this.tags.push({ ...this.tags[0], id: this.nextId++, name: body.tag, description: 'Autocreated', tag_type: body.type ?? 0 });
      if (this.tagged.some((t) => t.uuid === n.uuid && t.tag === body.tag)) return json(500, rec('POST /api/v1/nodes/prod/tag 500'));
      this.tagged.push({ uuid: n.uuid, tag: body.tag });
      return json(200, rec('POST /api/v1/nodes/prod/tag 200'));
    }

    if ((p = route('GET', '/api/v1/tags/{env}'))) {
      if (!can('admin', envOf(p.env!)?.UUID ?? '')) return json(403, rec('GET /api/v1/tags/prod 403'));
      return json(200, this.tags);
    }
    if ((p = route('POST', '/api/v1/tags/{env}/{action}'))) {
      if (!can('admin', envOf(p.env!)?.UUID ?? '')) return noAccess();
      const t = this.tags.find((x) => x.name === body?.name);
      if (p.action === 'add') {
        if (t) return err(500, 'error adding tag');
        this.tags.push({ ...this.tags[0], id: this.nextId++, name: body.name, description: body.description ?? '', tag_type: body.tagtype ?? 0, custom_tag: body.custom ?? '', created_by: me });
        return json(200, rec('POST /api/v1/tags/prod/add 200'));
      }
      if (!t) return err(404, 'tag not found');
      if (p.action === 'edit') {
        if (body.description !== undefined) t.description = body.description;
        t.tag_type = body.tagtype ?? 0; // an omitted type resets it
        return json(200, rec('POST /api/v1/tags/prod/edit 200'));
      }
      if (p.action === 'remove') {
        this.tags.splice(this.tags.indexOf(t), 1); // its tagged-node rows stay (osctrl)
        return json(200, rec('POST /api/v1/tags/prod/remove 200'));
      }
      return err(400, 'invalid action');
    }

    if ((p = route('GET', '/api/v1/settings/{service}/{env}'))) return json(200, []);
    if ((p = route('GET', '/api/v1/settings/{service}'))) return json(200, this.settings.filter((s) => s.Service === p!.service));
    if ((p = route('PATCH', '/api/v1/settings/{service}/{name}'))) {
      if (!can('admin', '')) return noAccess();
      const s = this.settings.find((x) => x.Service === p!.service && x.Name === p!.name);
      if (!s) return err(404, 'setting not found');
      if (typeof body?.integer === 'number') s.Integer = body.integer;
      return json(200, s);
    }

    // Queries and carves: what QueriesRunHandler / CarvesRunHandler do with the targets.
    const createRun = (kind: 'query' | 'carve', envUuid: string) => {
      const lists = { uuid: body.uuid_list ?? [], host: body.host_list ?? [], platform: body.platform_list ?? [], tag: body.tag_list ?? [] };
      const any = Object.values(lists).some((l) => l.length);
      let ids: string[] = [];
      const intersect = (b: string[]) => (ids = ids.length === 0 ? b : b.length === 0 ? ids : ids.filter((x) => b.includes(x)));
      if (!any) ids = this.nodes.map((n) => n.uuid);
      if (lists.platform.length) intersect(this.nodes.filter((n) => lists.platform.includes(n.platform)).map((n) => n.uuid));
      if (lists.uuid.length) intersect(lists.uuid.map((x: string) => this.nodes.find((n) => n.uuid === x)?.uuid ?? ''));
      if (lists.host.length) intersect(lists.host.map((x: string) => this.nodes.find((n) => n.hostname === x || n.localname === x)?.uuid ?? ''));
      if (lists.tag.length) intersect(this.tagged.filter((t) => lists.tag.includes(t.tag)).map((t) => t.uuid));
      const now = new Date();
      // exp_hours 0 stores a zero expiration: osctrl-tls never hands such a query out.
      const expiration = body.exp_hours ? new Date(now.getTime() + body.exp_hours * 3600_000).toISOString() : NEVER;
      const name = `${kind}_${randomBytes(16).toString('hex')}`;
      const q = { ...this.queries[0], id: this.nextId++, name, creator: me, query: kind === 'carve' ? `SELECT * FROM carves WHERE carve=1 AND path = '${body.path}';` : body.query, path: body.path ?? '', type: kind, expected: ids.filter(Boolean).length, executions: 0, errors: 0, active: true, completed: false, expired: false, deleted: false, hidden: Boolean(body.hidden), expiration, created_at: now.toISOString(), updated_at: now.toISOString(), environment_id: ENVS.find((e) => e.UUID === envUuid)!.ID, _targets: ids.filter(Boolean) };
      return q;
    };
    const strip = (q: any) => Object.fromEntries(Object.entries(q).filter(([k]) => !k.startsWith('_')));
    if ((p = route('POST', '/api/v1/queries/{env}'))) {
      const e = envOf(p.env!)!;
      if (!can('query', e.UUID)) return json(403, rec('POST /api/v1/queries/prod 403'));
      if (!body?.query) return err(400, 'query can not be empty');
      const q = createRun('query', e.UUID);
      this.queries.unshift(q);
      return json(200, { query_name: q.name });
    }
    if ((p = route('GET', '/api/v1/queries/{env}/list/{target}'))) {
      const e = envOf(p.env!)!;
      if (!can('query', e.UUID)) return noAccess();
      this.deliver();
      const t = p.target;
      const items = this.queries.filter((q) => q.type === 'query').filter((q) =>
        t === 'all-full' ? !q.deleted : t === 'all' ? !q.deleted && !q.hidden : t === 'active' ? q.active && !q.completed && !q.deleted && !q.expired : t === 'completed' ? !q.active && q.completed && !q.deleted && !q.expired : t === 'expired' ? q.expired && !q.deleted : t === 'deleted' ? q.deleted : false);
      return json(200, { items: items.map(strip), page: 1, page_size: 50, total_items: items.length, total_pages: items.length ? 1 : 0 });
    }
    if ((p = route('GET', '/api/v1/queries/{env}/results/{name}'))) {
      this.deliver();
      if (!this.queries.some((q) => q.name === p!.name)) return err(404, 'query not found');
      const items = this.results.filter((r) => r.name === p!.name);
      const size = Math.min(1000, Number(u.searchParams.get('page_size')) || 100);
      const page = Math.max(1, Number(u.searchParams.get('page')) || 1);
      return json(200, { items: items.slice((page - 1) * size, page * size), page, page_size: size, total_items: items.length, total_pages: items.length ? Math.ceil(items.length / size) : 0 });
    }
    if ((p = route('GET', '/api/v1/queries/{env}/{name}'))) {
      this.deliver();
      const q = this.queries.find((x) => x.name === p!.name);
      return json(200, q ? { ...strip(q), targets: [] } : rec('GET /api/v1/queries/prod/query_nope 200'));
    }
    if ((p = route('POST', '/api/v1/queries/{env}/{action}/{name}'))) {
      if (!can('admin', envOf(p.env!)!.UUID)) return noAccess();
      const q = this.queries.find((x) => x.name === p!.name);
      if (!q) return err(404, 'query not found');
      if (p.action === 'expire') Object.assign(q, { expired: true, active: false });
      else if (p.action === 'complete') Object.assign(q, { completed: true, active: false });
      else if (p.action === 'delete') Object.assign(q, { deleted: true, active: false });
      else return json(200, { message: '' }); // an unknown action: 200, nothing changed
      return json(200, { message: `query ${q.name} ${p.action === 'expire' ? 'expired' : `${p.action}d`} successfully` });
    }

    if ((p = route('POST', '/api/v1/carves/{env}'))) {
      const e = envOf(p.env!)!;
      if (!can('carve', e.UUID)) return noAccess();
      if (!body?.path) return err(400, 'path can not be empty');
      const q = createRun('carve', e.UUID);
      this.carves.unshift(q);
      return json(201, { query_name: q.name });
    }
    if ((p = route('GET', '/api/v1/carves/{env}'))) {
      if (!can('carve', envOf(p.env!)!.UUID)) return json(403, rec('GET /api/v1/carves/prod 403'));
      const target = u.searchParams.get('target');
      const status = (c: any) => (c.deleted ? 'DELETED' : c.expired ? 'EXPIRED' : c.completed ? 'COMPLETED' : (this.carveFiles.get(c.name)?.length ? 'PENDING' : 'ACTIVE'));
      const items = this.carves.filter((c) => !target || status(c).toLowerCase() === target).map((c) => ({ ...strip(c), carve_status: status(c) }));
      return json(200, { items, page: 1, page_size: 50, total_items: items.length, total_pages: items.length ? 1 : 0 });
    }
    if ((p = route('GET', '/api/v1/carves/{env}/archive/{name}'))) {
      if (!this.carveFiles.get(p.name!)?.length) return err(404, 'no carved files yet');
      const tar = Buffer.from(rec<{ base64: string }>('GET /api/v1/carves/prod/archive/{carve} 200').base64, 'base64');
      res.writeHead(200, { 'content-type': RECORDED['GET /api/v1/carves/prod/archive/{carve} 200']!.content_type, 'content-length': String(tar.length) });
      return void res.end(tar);
    }
    if ((p = route('GET', '/api/v1/carves/{env}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return err(404, 'carve not found');
      return json(200, { query: { ...strip(c), targets: [] }, files: this.carveFiles.get(c.name) ?? [] });
    }
    if ((p = route('POST', '/api/v1/carves/{env}/{action}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return err(404, 'carve not found');
      const key = `POST /api/v1/carves/prod/${p.action}/{carve} 200`;
      if (!RECORDED[key]) return err(400, 'invalid action');
      c[p.action === 'delete' ? 'deleted' : p.action === 'expire' ? 'expired' : 'completed'] = true;
      c.active = false;
      return json(200, { message: rec<{ message: string }>(key).message.replace(/carve_[0-9a-f]{32}/, c.name) });
    }

    if (route('GET', '/api/v1/audit-logs')) {
      const envUuid = u.searchParams.get('env_uuid');
      const who = u.searchParams.get('username');
      // osctrl: a substring match on the user; non-super-admins see their own entries.
      const list = this.audit.filter((a) => (!envUuid || a.env_uuid === envUuid) && (!who || a.username.includes(who)) && (can('admin', '') || a.username === me));
      return json(200, { items: list, page: 1, page_size: 50, total_items: list.length, total_pages: list.length ? 1 : 0 });
    }
    if (route('GET', '/api/v1/stats')) return json(200, rec('GET /api/v1/stats 200'));
    // Go 1.22 ServeMux with `GET /` registered: unknown GETs 404, other methods 405.
    if (method === 'GET') return text(404, rec('GET /api/v1/nope 404'));
    return text(405, 'Method Not Allowed\n');
  }
}
