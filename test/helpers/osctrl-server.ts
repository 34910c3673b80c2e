// A stand-in for osctrl-api 0.5.4 that replays what the real one answered (osctrl-recorded.ts:
// test/fixtures/osctrl/recorded.json, recorded by scripts/osctrl-run.mjs against osctrl-api,
// osctrl-tls and real osquery 5.23.0 agents, commit 3c1c5ab4). Every static answer, every error
// and every message is the recorded body, byte for byte (a query or carve name swapped in, and the
// scrubbed token filled); the records it holds (nodes, users, permissions, tags, settings, queries,
// live query answers, a carve and its archive) are the recorded ones. A body osctrl builds from
// its records (a filtered page, a changed record) is built from those records in osctrl's key
// order: each such place says so. The rules are the real server's as observed (docs/osctrl.md):
// a permission check that stops at the first row of the level asked; logout that ends only a
// session sent as the `osctrl_token` cookie; a zero expiry that no agent ever receives; 200 with
// an empty record for an unknown query or action; 409 for an existing tag, 500 for tagging a node
// twice, 400 for removing yourself; query targets kept as osctrl records them; substring user
// matches in the audit log; target kinds intersected; 10 logins a minute. Environment writes
// (env create/edit/delete) are in osctrl-environments.ts. In memory, on 127.0.0.1; `requests`
// records what was sent.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { platformBucket } from '../../src/lib/platforms.js';
import { RECORDED, marshal, raw, rec, recordedAnswers, replay } from './osctrl-recorded.js';
import { environmentWrite, type OsctrlEnv } from './osctrl-environments.js';

export { RECORDED, rec, raw } from './osctrl-recorded.js';
export const OSCTRL_PASSWORD = 'osctrl-pass-1';
const NEVER = '0001-01-01T00:00:00Z';
const NO_ACCESS = 'GET /api/v1/users 403'; // {"error":"no access"}, what every permission check answers
const ENV_404 = 'GET /api/v1/environments/nope 404'; // {"error":"environment not found"}, every handler's unknown env
const noAccessAnswer = (res: ServerResponse) => replay(res, NO_ACCESS);

export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  body: any;
  cookie?: string;
}
type Level = 'admin' | 'query' | 'carve' | 'user';
/** osctrl's access types, in its order: AdminLevel 0, QueryLevel 1, CarveLevel 2, UserLevel 3. */
const LEVEL_TYPE: Record<Level, number> = { admin: 0, query: 1, carve: 2, user: 3 };
interface Row {
  type: number;
  value: boolean;
  env: string;
}
interface OUser {
  view: any;
  password: string;
  token?: string;
  rows: Row[];
}

const MAP = rec<Record<string, { ID: number; Name: string; UUID: string }>>('GET /api/v1/environments/map/id 200');
export const ENVS = Object.values(MAP).sort((a, b) => a.ID - b.ID);
export const PROD = ENVS.find((e) => e.Name === 'prod')!.UUID;
export const DEV = ENVS.find((e) => e.Name === 'dev')!.UUID;
/** What real agents answered, by SQL and node: the only live query answers this stand-in gives. */
export const ANSWERS = recordedAnswers();
const CARVE = rec('GET /api/v1/carves/prod/{carve} 200 (uploaded)');

export class OsctrlStandIn {
  requests: Recorded[] = [];
  users = new Map<string, OUser>();
  nodes: any[] = rec<{ items: any[] }>('GET /api/v1/nodes/prod 200').items;
  devNodes: any[] = rec<{ items: any[] }>('GET /api/v1/nodes/dev 200').items;
  tags: any[] = rec<any[]>('GET /api/v1/tags/prod 200');
  tagged: Array<{ uuid: string; tag: string }> = [];
  settings: any[] = [...rec<any[]>('GET /api/v1/settings/admin 200'), ...rec<any[]>('GET /api/v1/settings/tls 200')];
  /** Its environments (env create and delete change them; ENVS is the recorded pair). */
  envs: OsctrlEnv[] = ENVS.map((e) => ({ ...e }));
  envViews = new Map<string, Record<string, any>>([
    [PROD, rec('GET /api/v1/environments/prod 200')],
    [DEV, rec('GET /api/v1/environments/dev 200')],
  ]);
  queries: any[] = rec<{ items: any[] }>('GET /api/v1/queries/prod/list/all-full 200').items;
  results: any[] = [];
  carves: any[] = [{ ...CARVE.query, carve_status: 'COMPLETED' }];
  carveFiles = new Map<string, any[]>([[CARVE.query.name, CARVE.files]]);
  audit: any[] = rec<{ items: any[] }>('GET /api/v1/audit-logs 200').items;
  private loginTimes: number[] = [];
  private nextId = 1000;
  private server = createServer(
    (req, res) =>
      void this.handle(req, res).catch((e: Error) => {
        // A stand-in bug must fail the test loudly, not hang the CLI until its timeout.
        console.error('osctrl stand-in:', e.stack);
        if (!res.headersSent) res.writeHead(599);
        res.end(`stand-in error: ${e.message}`);
      }),
  );
  url = '';

  constructor() {
    for (const u of rec<any[]>('GET /api/v1/users 200')) {
      const key = `GET /api/v1/users/${u.username}/permissions 200`;
      const perms: Record<string, Record<Level, boolean>> = RECORDED[key] ? rec(key).permissions : {};
      // osctrl's rows per env as user add writes them: user, admin, query, carve.
      const rows = Object.entries(perms).flatMap(([env, a]) =>
        (['user', 'admin', 'query', 'carve'] as Level[]).map((l) => ({ type: LEVEL_TYPE[l], value: a[l], env })),
      );
      this.users.set(u.username, { view: u, password: OSCTRL_PASSWORD, rows });
    }
    for (const q of this.queries) q._targets = [];
    // osctrl-tls tagged every node it enrolled with its environment's name and its platform.
    for (const n of this.nodes) this.tagged.push({ uuid: n.uuid, tag: 'prod' }, { uuid: n.uuid, tag: n.platform });
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
    for (const r of this.users.get(username)?.rows ?? [])
      if (r.env === env) out[(Object.keys(LEVEL_TYPE) as Level[]).find((l) => LEVEL_TYPE[l] === r.type)!] = r.value;
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

  /**
   * What osctrl-tls and its agents did: an active, unexpired query is answered by each targeted
   * node with the answer that node really gave to that SQL (recorded). A SQL nobody recorded gets
   * no answer: this stand-in makes none up.
   */
  private deliver(now = Date.now()): void {
    for (const q of this.queries) {
      if (!q.active || q.expired || q.deleted || q.completed || Date.parse(q.expiration) <= now) continue;
      const answers = ANSWERS.get(q.query);
      if (!answers) continue;
      for (const uuid of (q._targets ?? []) as string[]) {
        const a = answers.get(uuid);
        if (!a || this.results.some((r) => r.name === q.name && r.uuid === uuid)) continue;
        // osctrl's result row, its `data` the text osctrl-tls stored, with this query's name.
        this.results.push({
          created_at: new Date(now).toISOString(),
          data: a.data.split(a.name).join(q.name),
          environment: 'prod',
          id: this.nextId++,
          name: q.name,
          status: a.status,
          uuid,
        });
        if (a.status) q.errors++;
        else q.executions++;
      }
      if (q.executions + q.errors >= q.expected) Object.assign(q, { active: false, completed: true });
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://x');
    let text = '';
    for await (const c of req) text += c;
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: u.pathname, query: Object.fromEntries(u.searchParams), body, cookie: req.headers.cookie });
    const play = (key: string, swap: Array<[string | RegExp, string]> = []) => replay(res, key, swap);
    const built = (status: number, v: unknown) => marshal(res, status, v);
    const route = (m: string, pattern: string): Record<string, string> | undefined => {
      if (m !== method) return undefined;
      const re = new RegExp(`^${pattern.replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}$`);
      const hit = re.exec(u.pathname);
      return hit ? Object.fromEntries(Object.entries(hit.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)])) : undefined;
    };
    const envOf = (ref: string) => this.envs.find((e) => e.Name === ref || e.UUID === ref);
    /** osctrl's one-line error body for an answer nobody recorded: {"error": msg}, as apiErrorResponse writes it. */
    const unrecorded = (status: number, msg: string) => built(status, { error: msg });
    let p: Record<string, string> | undefined;

    // Unauthenticated routes.
    const sameEnvs = this.envs.length === ENVS.length && this.envs.every((e, i) => e.Name === ENVS[i].Name && e.UUID === ENVS[i].UUID);
    if (route('GET', '/api/v1/login/environments')) {
      // Built, in the recorded shape ({uuid, name} by name), once env create or delete changed the recorded pair.
      return sameEnvs
        ? play('GET /api/v1/login/environments 200')
        : built(
            200,
            [...this.envs].sort((a, b) => a.Name.localeCompare(b.Name)).map((e) => ({ uuid: e.UUID, name: e.Name })),
          );
    }
    if (route('GET', '/api/v1/auth/methods')) return play('GET /api/v1/auth/methods 200');
    if (route('GET', '/error')) return play('GET /error 500');
    if ((p = route('POST', '/api/v1/login/{env}')) || (p = route('POST', '/api/v1/login'))) {
      const now = Date.now();
      this.loginTimes = this.loginTimes.filter((t) => t > now - 60_000);
      if (this.loginTimes.length >= 10) return play('POST /api/v1/login 429');
      this.loginTimes.push(now);
      const user = this.users.get(body?.username);
      if (!user || !body?.password || user.password !== body.password) return play('POST /api/v1/login 403');
      if (p.env !== undefined) {
        const e = envOf(p.env);
        // fleetctl logs in without the env (its /login/{env} lets in env admins only): never reached by it.
        if (!e) return play(ENV_404);
        if (!this.can(body.username, 'admin', e.UUID)) return noAccessAnswer(res);
      }
      const claims = Buffer.from(
        JSON.stringify({
          username: body.username,
          iss: 'osctrl-api',
          exp: Math.floor(now / 1000) + 3 * 3600,
          jti: randomBytes(16).toString('hex'),
        }),
      ).toString('base64url');
      user.token = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${claims}.sig`;
      return play('POST /api/v1/login 200', [
        ['REDACTED-TOKEN', user.token],
        ['REDACTED-CSRF_TOKEN', randomBytes(16).toString('hex')],
      ]);
    }
    if (route('POST', '/api/v1/logout')) {
      // Only the cookie counts: a Bearer header on a logout ends nothing.
      const cookie = /(?:^|;\s*)osctrl_token=([^;]*)/.exec(req.headers.cookie ?? '')?.[1];
      const owner = cookie ? [...this.users.values()].find((x) => x.token && x.token === cookie) : undefined;
      if (owner) owner.token = undefined;
      return play('POST /api/v1/logout 200');
    }

    const auth = /^Bearer(.*)$/.exec(req.headers.authorization ?? '')?.[1]?.trim();
    const meEntry = [...this.users.entries()].find(([, x]) => x.token && x.token === auth);
    if (!meEntry) return play('GET /api/v1/users/me 401');
    const [me, meUser] = meEntry;
    const noAccess = () => play(NO_ACCESS);
    const can = (l: Level, env: string) => this.can(me, l, env);
    const perms = (name: string) =>
      Object.fromEntries([...new Set(this.users.get(name)!.rows.map((r) => r.env))].map((env) => [env, this.rowsOf(name, env)]));

    if ((p = route('GET', '/api/v1/environments/map/{target}'))) {
      if (!can('admin', '')) return noAccess();
      if (p.target === 'id')
        return sameEnvs
          ? play('GET /api/v1/environments/map/id 200')
          : built(200, Object.fromEntries(this.envs.map((e) => [String(e.ID), { Name: e.Name, UUID: e.UUID, ID: e.ID }])));
      return built(
        200,
        Object.fromEntries(
          this.envs.flatMap((e) => [
            [e.Name, e],
            [e.UUID, e],
          ]),
        ),
      ); // osctrl: every env under its name and its UUID
    }
    if ((p = route('GET', '/api/v1/environments/config/{env}')) || (p = route('PATCH', '/api/v1/environments/config/{env}'))) {
      if (!can('admin', envOf(p.env)?.UUID ?? '')) return play('GET /api/v1/environments/config/prod 403');
      return play(`${method} /api/v1/environments/config/prod 200`);
    }
    if ((p = route('GET', '/api/v1/environments/{env}'))) {
      const e = envOf(p.env);
      if (!e) return play(ENV_404);
      if (!can('user', e.UUID)) return noAccess();
      const v: Record<string, any> = { ...this.envViews.get(e.UUID) };
      // A non-admin gets osctrl's TLSEnvironmentView: the same record without its secrets.
      if (!can('admin', e.UUID))
        for (const k of ['secret', 'certificate', 'flags', 'enroll_secret_path', 'remove_secret_path']) delete v[k];
      return built(200, v);
    }
    if (environmentWrite({ method, body, route, play, built, unrecorded, can, envOf }, this)) return;
    if ((p = route('POST', '/api/v1/environments/{env}/enroll/{action}'))) {
      const e = envOf(p.env);
      if (!e) return play(ENV_404);
      if (!can('admin', e.UUID)) return noAccess();
      const key = `POST /api/v1/environments/dev/enroll/${p.action} 200`;
      if (!RECORDED[key]) return unrecorded(400, 'invalid action'); // fleetctl sends the actions osctrl has (recorded)
      const v = this.envViews.get(e.UUID)!;
      if (p.action === 'set_deb') v.deb_package = body?.url_deb_pkg ?? '';
      // osctrl's EnvManager: expire sets the enroll expiry to now, extend to now + 24 h, notexpire to the zero time.
      if (p.action === 'expire') v.enroll_expire = new Date().toISOString();
      if (p.action === 'extend') v.enroll_expire = new Date(Date.now() + 24 * 3600_000).toISOString();
      if (p.action === 'notexpire') v.enroll_expire = NEVER;
      return play(key); // rotate renews the path and keeps the secret (REDACTED-SECRET before and after)
    }
    if (
      (p = route('GET', '/api/v1/environments/{env}/enroll/{target}')) ||
      (p = route('GET', '/api/v1/environments/{env}/remove/{target}'))
    ) {
      const e = envOf(p.env);
      if (!e) return play(ENV_404);
      if (!can('admin', e.UUID)) return play('GET /api/v1/environments/prod/enroll/secret 403');
      const kind = u.pathname.includes('/remove/') ? 'remove' : 'enroll';
      // Recorded for dev: the scripts name dev's UUID whatever env is asked.
      const key = `GET /api/v1/environments/dev/${kind}/${p.target} 200`;
      return RECORDED[key] ? play(key) : unrecorded(400, 'invalid target'); // fleetctl checks the target first
    }
    if ((p = route('PATCH', '/api/v1/environments/intervals/{env}'))) {
      const e = envOf(p.env);
      if (!e) return play(ENV_404);
      if (!can('admin', e.UUID)) return noAccess();
      const v = this.envViews.get(e.UUID)!;
      for (const k of ['config_interval', 'log_interval', 'query_interval']) if (typeof body?.[k] === 'number') v[k] = body[k];
      return built(200, v); // osctrl answers with the changed record
    }

    if (route('GET', '/api/v1/users'))
      return can('admin', '')
        ? built(
            200,
            [...this.users.values()].map((x) => x.view),
          )
        : noAccess();
    if (route('GET', '/api/v1/users/me'))
      return built(200, {
        ...rec<Record<string, any>>('GET /api/v1/users/me 200'),
        ...pick(meUser.view, ['username', 'email', 'fullname', 'admin', 'service', 'uuid']),
        permissions: perms(me),
      });
    if ((p = route('GET', '/api/v1/users/{username}/permissions'))) {
      if (!can('admin', '')) return noAccess();
      if (!this.users.get(p.username)) return unrecorded(404, 'user not found'); // fleetctl reads listed users only
      return built(200, { username: p.username, permissions: perms(p.username) }); // shape of GET /api/v1/users/quinn/permissions 200
    }
    if ((p = route('POST', '/api/v1/users/{username}/permissions'))) {
      if (!can('admin', '')) return noAccess();
      const x = this.users.get(p.username);
      if (!x) return unrecorded(404, 'user not found'); // fleetctl checks the list first
      // ChangeAccess: user, query, carve, admin, each row updated in place or appended.
      for (const l of ['user', 'query', 'carve', 'admin'] as Level[]) {
        const row = x.rows.find((r) => r.env === body.env_uuid && r.type === LEVEL_TYPE[l]);
        if (row) row.value = Boolean(body.access?.[l]);
        else x.rows.push({ env: body.env_uuid, type: LEVEL_TYPE[l], value: Boolean(body.access?.[l]) });
      }
      // osctrl answers with the access it stored for that env, in its order (recorded: {"user":…,"query":…,"carve":…,"admin":…}).
      const a = this.rowsOf(p.username, body.env_uuid);
      return built(200, { user: a.user, query: a.query, carve: a.carve, admin: a.admin });
    }
    if (route('POST', '/api/v1/users/me/password')) {
      if (String(body?.new_password ?? '').length < 8) return play('POST /api/v1/users/me/password 400');
      if (body?.current_password !== meUser.password) return play('POST /api/v1/users/me/password 403');
      meUser.password = body.new_password; // osctrl ends no session here
      return play('POST /api/v1/users/me/password 200');
    }
    if ((p = route('POST', '/api/v1/users/{username}/{action}'))) {
      if (!can('admin', '')) return noAccess();
      const x = this.users.get(p.username);
      if (p.action === 'add') {
        if (x) return play('POST /api/v1/users/{user}/add 500');
        const envs: string[] = body.admin ? this.envs.map((e) => e.UUID) : (body.environments ?? []);
        const a: Record<Level, boolean> = {
          user: body.user_access ?? true,
          query: body.query_access ?? Boolean(body.admin),
          carve: body.carve_access ?? Boolean(body.admin),
          admin: body.admin_access ?? Boolean(body.admin),
        };
        const rows = envs.flatMap((env) =>
          (['user', 'admin', 'query', 'carve'] as Level[]).map((l) => ({ env, type: LEVEL_TYPE[l], value: a[l] })),
        );
        this.users.set(p.username, {
          view: {
            ...rec<any[]>('GET /api/v1/users 200')[0],
            id: this.nextId++,
            username: p.username,
            email: body.email ?? '',
            fullname: body.fullname ?? '',
            admin: Boolean(body.admin),
            service: Boolean(body.service),
          },
          password: body.password ?? '',
          rows,
        });
        return play('POST /api/v1/users/{user}/add 200');
      }
      if (p.action === 'edit') {
        if (!x) return unrecorded(400, 'user does not exist'); // fleetctl checks the list first
        if (body.fullname) x.view.fullname = body.fullname;
        if (body.email) x.view.email = body.email;
        if (body.password) x.password = body.password; // and the user's token stays valid
        return play('POST /api/v1/users/{user}/edit 200');
      }
      if (p.action === 'remove') {
        if (body?.username === me) return play('POST /api/v1/users/{user}/remove 400'); // nobody removes themself
        this.users.delete(p.username); // a missing user is "removed" too
        return play('POST /api/v1/users/{user}/remove 200');
      }
      return built(200, { data: '' }); // no default branch in osctrl: an unknown action is a 200
    }

    if ((p = route('GET', '/api/v1/nodes/{env}'))) {
      const e = envOf(p.env);
      if (!e) return play(ENV_404);
      if (!can('user', e.UUID)) return noAccess();
      // osctrl's page of its node records, filtered and sorted as NodesPagedHandler does.
      const q = (u.searchParams.get('q') ?? '').toLowerCase();
      const bucket = u.searchParams.get('platform') ?? '';
      let items = (e.UUID === PROD ? this.nodes : e.UUID === DEV ? this.devNodes : []).filter(
        (n) =>
          (!q || [n.hostname, n.uuid, n.localname, n.ip_address, n.platform].some((v: string) => v.toLowerCase().includes(q))) &&
          (!bucket || platformBucket(n.platform) === bucket),
      );
      const key = u.searchParams.get('sort') === 'hostname' ? 'hostname' : 'last_seen';
      const desc = u.searchParams.get('dir') ? u.searchParams.get('dir') === 'desc' : key === 'last_seen';
      items = [...items].sort((a, b) => String(a[key]).localeCompare(String(b[key])) * (desc ? -1 : 1));
      const size = Math.min(500, Number(u.searchParams.get('page_size')) || 50);
      const page = Math.max(1, Number(u.searchParams.get('page')) || 1);
      return built(200, {
        items: items.slice((page - 1) * size, page * size),
        page,
        page_size: size,
        total_items: items.length,
        total_pages: Math.max(1, Math.ceil(items.length / size)),
      });
    }
    if ((p = route('GET', '/api/v1/nodes/{env}/node/{node}'))) {
      const n = this.nodes.find((x) => [x.uuid, x.hostname, x.localname].includes(p!.node));
      if (!n) return play('GET /api/v1/nodes/prod/node/{node} 404');
      const one = rec('GET /api/v1/nodes/prod/node/{node} 200');
      if (one.uuid === n.uuid) return play('GET /api/v1/nodes/prod/node/{node} 200');
      return built(200, can('admin', PROD) ? { ...n, node_key: 'REDACTED-NODE_KEY' } : n); // another node: its list record, with the key for admins
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/delete'))) {
      if (!can('admin', PROD)) return noAccess();
      const i = this.nodes.findIndex((x) => x.uuid === body?.uuid);
      if (i < 0) return play('GET /api/v1/nodes/prod/node/{node} 404');
      this.nodes.splice(i, 1);
      return play('POST /api/v1/nodes/prod/delete 200');
    }
    if ((p = route('POST', '/api/v1/nodes/{env}/tag'))) {
      if (!can('admin', PROD)) return noAccess();
      const n = this.nodes.find((x) => x.uuid === body?.uuid);
      if (!n) return play('GET /api/v1/nodes/prod/node/{node} 404');
      if (!this.tags.some((t) => t.name === body.tag))
        this.tags.push({ ...this.tags[0], id: this.nextId++, name: body.tag, description: 'Autocreated', tag_type: body.type ?? 0 });
      if (this.tagged.some((t) => t.uuid === n.uuid && t.tag === body.tag)) return play('POST /api/v1/nodes/prod/tag 500');
      this.tagged.push({ uuid: n.uuid, tag: body.tag });
      return play('POST /api/v1/nodes/prod/tag 200');
    }

    if ((p = route('GET', '/api/v1/tags/{env}'))) {
      if (!can('admin', envOf(p.env)?.UUID ?? '')) return play('GET /api/v1/tags/prod 403');
      return built(200, this.tags); // osctrl's tag records, never a node count
    }
    if ((p = route('POST', '/api/v1/tags/{env}/{action}'))) {
      if (!can('admin', envOf(p.env)?.UUID ?? '')) return noAccess();
      const t = this.tags.find((x) => x.name === body?.name);
      if (p.action === 'add') {
        if (t) return play('POST /api/v1/tags/prod/add 409');
        this.tags.push({
          ...this.tags[0],
          id: this.nextId++,
          name: body.name,
          description: body.description ?? '',
          tag_type: body.tagtype ?? 0,
          custom_tag: body.custom ?? '',
          auto_tag: false,
          created_by: me,
        });
        return play('POST /api/v1/tags/prod/add 200');
      }
      if (!t) return play('POST /api/v1/tags/prod/remove 404');
      if (p.action === 'edit') {
        if (body.description !== undefined) t.description = body.description;
        t.tag_type = body.tagtype ?? 0; // an omitted type resets it
        return play('POST /api/v1/tags/prod/edit 200');
      }
      if (p.action === 'remove') {
        this.tags.splice(this.tags.indexOf(t), 1); // its tagged-node rows stay (osctrl)
        return play('POST /api/v1/tags/prod/remove 200');
      }
      return unrecorded(400, 'invalid action'); // fleetctl sends add, edit, remove only
    }

    if ((p = route('GET', '/api/v1/settings/{service}/{env}'))) return play('GET /api/v1/settings/admin/prod 200'); // []: no env rows
    if ((p = route('GET', '/api/v1/settings/{service}')))
      return built(
        200,
        this.settings.filter((s) => s.Service === p!.service),
      );
    if ((p = route('PATCH', '/api/v1/settings/{service}/{name}'))) {
      if (!can('admin', '')) return noAccess();
      const s = this.settings.find((x) => x.Service === p!.service && x.Name === p!.name);
      if (!s) return unrecorded(404, 'setting not found'); // fleetctl reads the list first
      if (typeof body?.integer === 'number') s.Integer = body.integer;
      return built(200, s); // the changed record
    }
    return this.liveAndRest(u, method, body, me, route, envOf, play, built, unrecorded, noAccess);
  }

  /** Queries, carves, audit, stats and the router's own answers. */
  private liveAndRest(
    u: URL,
    method: string,
    body: any,
    me: string,
    route: (m: string, pattern: string) => Record<string, string> | undefined,
    envOf: (ref: string) => (typeof ENVS)[number] | undefined,
    play: (key: string, swap?: Array<[string | RegExp, string]>) => void,
    built: (status: number, v: unknown) => void,
    unrecorded: (status: number, msg: string) => void,
    noAccess: () => void,
  ): void {
    const can = (l: Level, env: string) => this.can(me, l, env);
    let p: Record<string, string> | undefined;
    // What QueriesRunHandler / CarvesRunHandler do with the targets: kinds intersected, and the
    // targets recorded as BuildQueryTargetRecords does (environment, platform, uuid, host, tag; the env when none).
    const createRun = (kind: 'query' | 'carve', env: (typeof ENVS)[number]) => {
      const lists = {
        uuid: body.uuid_list ?? [],
        host: body.host_list ?? [],
        platform: body.platform_list ?? [],
        tag: body.tag_list ?? [],
      };
      let ids: string[] = [];
      const intersect = (b: string[]) => (ids = ids.length === 0 ? b : b.length === 0 ? ids : ids.filter((x) => b.includes(x)));
      if (!Object.values(lists).some((l) => l.length)) ids = this.nodes.map((n) => n.uuid);
      if (lists.platform.length) intersect(this.nodes.filter((n) => lists.platform.includes(n.platform)).map((n) => n.uuid));
      if (lists.uuid.length) intersect(lists.uuid.map((x: string) => this.nodes.find((n) => n.uuid === x)?.uuid ?? ''));
      if (lists.host.length)
        intersect(lists.host.map((x: string) => this.nodes.find((n) => n.hostname === x || n.localname === x)?.uuid ?? ''));
      if (lists.tag.length) intersect(this.tagged.filter((t) => lists.tag.includes(t.tag)).map((t) => t.uuid));
      const targets = [
        ...(body.environment_list ?? []).map((v: string) => ({ type: 'environment', value: v })),
        ...lists.platform.map((v: string) => ({ type: 'platform', value: v })),
        ...lists.uuid.map((v: string) => ({ type: 'uuid', value: v })),
        ...lists.host.map((v: string) => ({ type: 'host', value: v })),
        ...lists.tag.map((v: string) => ({ type: 'tag', value: v })),
      ];
      const now = new Date();
      // exp_hours 0 stores a zero expiration: osctrl-tls never hands such a query out.
      const expiration = body.exp_hours ? new Date(now.getTime() + body.exp_hours * 3600_000).toISOString() : NEVER;
      const name = `${kind}_${randomBytes(16).toString('hex')}`;
      return {
        ...this.queries[0],
        id: this.nextId++,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
        name,
        creator: me,
        query: kind === 'carve' ? `SELECT * FROM carves WHERE carve=1 AND path = '${body.path}';` : body.query,
        expected: ids.filter(Boolean).length,
        executions: 0,
        errors: 0,
        active: true,
        hidden: Boolean(body.hidden),
        completed: false,
        deleted: false,
        expired: false,
        type: kind,
        path: body.path ?? '',
        environment_id: env.ID,
        expiration,
        _targets: ids.filter(Boolean),
        _recordedTargets: targets.length ? targets : [{ type: 'environment', value: env.Name }],
      };
    };
    const strip = (q: any) => Object.fromEntries(Object.entries(q).filter(([k]) => !k.startsWith('_')));
    const detail = (q: any) => ({ ...strip(q), target: '', targets: q._recordedTargets ?? [] });
    const recordedName = (key: string, kind: string) => new RegExp(`${kind}_[0-9a-f]{32}`).exec(raw(key))?.[0] ?? '';
    if ((p = route('POST', '/api/v1/queries/{env}'))) {
      const e = envOf(p.env)!;
      if (!can('query', e.UUID)) return play('POST /api/v1/queries/prod 403');
      if (!body?.query) return unrecorded(400, 'query can not be empty'); // fleetctl never sends an empty query
      const q = createRun('query', e);
      this.queries.unshift(q);
      return play('POST /api/v1/queries/prod 200', [[recordedName('POST /api/v1/queries/prod 200', 'query'), q.name]]);
    }
    if ((p = route('GET', '/api/v1/queries/{env}/list/{target}'))) {
      if (!can('query', envOf(p.env)!.UUID)) return noAccess();
      this.deliver();
      const t = p.target;
      const items = this.queries
        .filter((q) => q.type === 'query')
        .filter((q) =>
          t === 'all-full'
            ? !q.deleted
            : t === 'all'
              ? !q.deleted && !q.hidden
              : t === 'active'
                ? q.active && !q.completed && !q.deleted && !q.expired
                : t === 'completed'
                  ? !q.active && q.completed && !q.deleted && !q.expired
                  : t === 'expired'
                    ? q.expired && !q.deleted
                    : t === 'deleted'
                      ? q.deleted
                      : false,
        );
      return built(200, { items: items.map(strip), page: 1, page_size: 50, total_items: items.length, total_pages: items.length ? 1 : 0 });
    }
    if ((p = route('GET', '/api/v1/queries/{env}/results/{name}'))) {
      this.deliver();
      if (!this.queries.some((q) => q.name === p!.name)) return unrecorded(404, 'query not found'); // fleetctl reads the query first
      const items = this.results.filter((r) => r.name === p!.name);
      const size = Math.min(1000, Number(u.searchParams.get('page_size')) || 100);
      const page = Math.max(1, Number(u.searchParams.get('page')) || 1);
      return built(200, {
        items: items.slice((page - 1) * size, page * size),
        page,
        page_size: size,
        total_items: items.length,
        total_pages: items.length ? Math.ceil(items.length / size) : 0,
      });
    }
    if ((p = route('GET', '/api/v1/queries/{env}/{name}'))) {
      this.deliver();
      const q = this.queries.find((x) => x.name === p!.name);
      return q ? built(200, detail(q)) : play('GET /api/v1/queries/prod/query_nope 200');
    }
    if ((p = route('POST', '/api/v1/queries/{env}/{action}/{name}'))) {
      if (!can('admin', envOf(p.env)!.UUID)) return noAccess();
      const q = this.queries.find((x) => x.name === p!.name);
      if (!q) return unrecorded(404, 'query not found'); // fleetctl reads the query first
      const done: Record<string, string> = { expire: 'expired', complete: 'completed', delete: 'deleted' };
      if (!done[p.action]) return built(200, { message: '' }); // an unknown action: 200, nothing changed
      Object.assign(q, { [done[p.action]]: true, active: false });
      const key = 'POST /api/v1/queries/prod/expire/{query} 200';
      return play(key, [
        [recordedName(key, 'query'), q.name],
        [' expired ', ` ${done[p.action]} `],
      ]);
    }

    if ((p = route('POST', '/api/v1/carves/{env}'))) {
      const e = envOf(p.env)!;
      if (!can('carve', e.UUID)) return noAccess();
      if (!body?.path) return unrecorded(400, 'path can not be empty'); // fleetctl always sends the path
      const q = createRun('carve', e);
      this.carves.unshift(q);
      return play('POST /api/v1/carves/prod 201', [[recordedName('POST /api/v1/carves/prod 201', 'carve'), q.name]]);
    }
    const status = (c: any) =>
      c.deleted
        ? 'DELETED'
        : c.expired
          ? 'EXPIRED'
          : c.completed
            ? 'COMPLETED'
            : this.carveFiles.get(c.name)?.length
              ? 'PENDING'
              : 'ACTIVE';
    if ((p = route('GET', '/api/v1/carves/{env}'))) {
      if (!can('carve', envOf(p.env)!.UUID)) return play('GET /api/v1/carves/prod 403');
      const target = u.searchParams.get('target');
      const items = this.carves
        .filter((c) => !target || status(c).toLowerCase() === target)
        .map((c) => ({ ...strip(c), carve_status: status(c) }));
      return built(200, { items, page: 1, page_size: 50, total_items: items.length, total_pages: items.length ? 1 : 0 });
    }
    if ((p = route('GET', '/api/v1/carves/{env}/archive/{name}'))) {
      if (!this.carveFiles.get(p.name)?.length) return unrecorded(404, 'no carved files yet'); // fleetctl downloads listed files only
      return play('GET /api/v1/carves/prod/archive/{carve} 200'); // the bytes osctrl sent for the recorded carve
    }
    if ((p = route('GET', '/api/v1/carves/{env}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return play('GET /api/v1/carves/prod/carve_nope 404');
      const asRecorded = ['deleted', 'expired', 'completed', 'active'].every((k) => c[k] === CARVE.query[k]);
      if (c.name === CARVE.query.name && asRecorded) return play('GET /api/v1/carves/prod/{carve} 200 (uploaded)');
      // osctrl's carve detail has no carve_status (its list does): the flavour derives it from the flags.
      const { carve_status: _listed, ...query } = detail(c) as Record<string, unknown>;
      return built(200, { query, files: this.carveFiles.get(c.name) ?? [] });
    }
    if ((p = route('POST', '/api/v1/carves/{env}/{action}/{name}'))) {
      const c = this.carves.find((x) => x.name === p!.name);
      if (!c) return play('GET /api/v1/carves/prod/carve_nope 404');
      const key = `POST /api/v1/carves/prod/${p.action}/{carve} 200`;
      if (!RECORDED[key]) return unrecorded(400, 'invalid action'); // archive is refused before any request
      c[p.action === 'delete' ? 'deleted' : p.action === 'expire' ? 'expired' : 'completed'] = true;
      c.active = false;
      return play(key, [[recordedName(key, 'carve'), c.name]]);
    }

    if (route('GET', '/api/v1/audit-logs')) {
      const envUuid = u.searchParams.get('env_uuid');
      const who = u.searchParams.get('username');
      // osctrl: a substring match on the user; non-super-admins see their own entries.
      const list = this.audit.filter(
        (a) => (!envUuid || a.env_uuid === envUuid) && (!who || a.username.includes(who)) && (can('admin', '') || a.username === me),
      );
      return built(200, { items: list, page: 1, page_size: 50, total_items: list.length, total_pages: list.length ? 1 : 0 });
    }
    if (route('GET', '/api/v1/stats')) return play('GET /api/v1/stats 200');
    // Go 1.22 ServeMux with `GET /` registered: unknown GETs 404, other methods 405.
    if (method === 'GET') return play('GET /api/v1/nope 404');
    return play('POST /api/v1/nope 405');
  }
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));
}
