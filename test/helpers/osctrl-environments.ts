// env create/edit/delete on the osctrl stand-in (issue 27's commands), as the real osctrl-api 0.5.4
// answered them to scripts/osctrl-run.mjs (test/fixtures/osctrl/recorded.json): POST
// /api/v1/environments 201 with the new record, 409 for a taken name, 403 for anyone but a
// super-admin; PATCH /api/v1/environments/{env} with the changed record; DELETE with its message
// (the nodes stay: osctrl's delete leaves them, fleetctl deletes them first). A new environment's
// record is the recorded one with its name, host, type, icon, uuid and id; its message is the
// recorded one with its name. osctrl's own filters (pkg/environments/filters.go) answer 400: fleetctl
// checks them before any request, so that answer was never recorded (its text is osctrl's).
import { randomUUID } from 'node:crypto';
import { rec } from './osctrl-recorded.js';

export interface OsctrlEnv {
  ID: number;
  Name: string;
  UUID: string;
}
type Level = 'admin' | 'query' | 'carve' | 'user';
export interface EnvRouteContext {
  method: string;
  body: unknown;
  route: (method: string, pattern: string) => Record<string, string> | undefined;
  play: (key: string, swap?: Array<[string | RegExp, string]>) => void;
  built: (status: number, v: unknown) => void;
  unrecorded: (status: number, msg: string) => void;
  can: (level: Level, env: string) => boolean;
  envOf: (ref: string) => OsctrlEnv | undefined;
}
export interface EnvStore {
  envs: OsctrlEnv[];
  envViews: Map<string, Record<string, unknown>>;
}

const NAME = /^[a-z0-9_-]+$/;
const HOST = /^[a-zA-Z0-9.-]+$/;
const ICON = /^[a-z0-9_-]+$/;
const ENV_404 = 'GET /api/v1/environments/nope 404';
const NO_ACCESS = 'GET /api/v1/users 403';

/** Answers an environment write and returns true, or returns false when the request is not one. */
export function environmentWrite(c: EnvRouteContext, store: EnvStore): boolean {
  const body = (c.body && typeof c.body === 'object' ? c.body : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  let p: Record<string, string> | undefined;
  if (c.route('POST', '/api/v1/environments')) {
    if (!c.can('admin', '')) return (c.play('POST /api/v1/environments 403'), true);
    const name = text(body.name).toLowerCase();
    const hostname = text(body.hostname);
    if (!NAME.test(name) || !HOST.test(hostname) || body.type !== 'osquery' || !ICON.test(text(body.icon))) {
      return (c.unrecorded(400, 'invalid name, hostname, type, or icon'), true);
    }
    if (c.envOf(name)) return (c.play('POST /api/v1/environments 409'), true);
    const now = new Date().toISOString();
    const e: OsctrlEnv = { ID: Math.max(...store.envs.map((x) => x.ID)) + 1, Name: name, UUID: randomUUID() };
    const view = {
      ...rec<Record<string, unknown>>('POST /api/v1/environments 201'),
      id: e.ID,
      created_at: now,
      updated_at: now,
      uuid: e.UUID,
      name,
      hostname,
      type: body.type,
      icon: body.icon,
    };
    store.envs.push(e);
    store.envViews.set(e.UUID, view);
    c.built(201, view); // the recorded record, this environment's fields in it
    return true;
  }
  if ((p = c.route('PATCH', '/api/v1/environments/{env}'))) {
    const e = c.envOf(p.env);
    if (!e) return (c.play(ENV_404), true);
    if (!c.can('admin', '')) return (c.play(NO_ACCESS), true);
    const v = store.envViews.get(e.UUID)!;
    if (body.name !== undefined) {
      const name = text(body.name).toLowerCase();
      if (!NAME.test(name)) return (c.unrecorded(400, 'invalid environment name'), true);
      if (name !== e.Name && c.envOf(name)) return (c.unrecorded(409, 'environment already exists'), true);
      e.Name = v.name = name;
    }
    if (body.hostname !== undefined) {
      if (!HOST.test(text(body.hostname))) return (c.unrecorded(400, 'invalid hostname'), true);
      v.hostname = text(body.hostname);
    }
    for (const k of ['accept_enrolls', 'debug_http']) if (typeof body[k] === 'boolean') v[k] = body[k];
    v.updated_at = new Date().toISOString();
    c.built(200, v); // osctrl answers with the changed record
    return true;
  }
  if ((p = c.route('DELETE', '/api/v1/environments/{env}'))) {
    const e = c.envOf(p.env);
    if (!e) return (c.play(ENV_404), true);
    if (!c.can('admin', '')) return (c.play(NO_ACCESS), true);
    store.envs.splice(store.envs.indexOf(e), 1);
    store.envViews.delete(e.UUID);
    c.play('DELETE /api/v1/environments/{uuid} 200', [['lab-b', e.Name]]); // {"message":"environment NAME deleted"}
    return true;
  }
  return false;
}
