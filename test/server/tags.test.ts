// GET /api/v1/tags/{env} (contract.md 5) and POST /api/v1/tags/{env}/{action} (4.10).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { RFC3339, TAG_FIELDS, auditRows, expectFields } from './env-helpers.js';

let ts: TestServer;
const tok: Record<string, string> = {};
let prodNodes: string[] = [];
let stagingNode = '';

beforeAll(async () => {
  ts = await startTestServer();
  tok.admin = await ts.login('admin');
  tok.prodAdmin = await ts.login('prod-admin');
  tok.analyst = await ts.login('analyst');
  tok.querier = await ts.login('querier');
  tok.devUser = await ts.login('dev-user', 'dev');
  const nodes = await ts.call('GET', '/api/v1/nodes/prod?page_size=5&sort=hostname', { token: tok.admin });
  prodNodes = nodes.body.items.map((n: { uuid: string }) => n.uuid);
  const staging = await ts.call('GET', '/api/v1/nodes/staging?page_size=1', { token: tok.admin });
  stagingNode = staging.body.items[0].uuid;
});
afterAll(async () => ts?.close());

const list = async (env = 'prod', token = tok.analyst) => {
  const r = await ts.call('GET', `/api/v1/tags/${env}`, { token });
  expect(r.status).toBe(200);
  return r.body as Record<string, any>[];
};
const tagOf = async (name: string, env = 'prod') => (await list(env, tok.admin)).find((t) => t.name === name);
const act = (action: string, body: unknown, o: { env?: string; token?: string } = {}) =>
  ts.call('POST', `/api/v1/tags/${o.env ?? 'prod'}/${action}`, { token: o.token ?? tok.prodAdmin, body });
const nodeTags = async (uuid: string) =>
  ((await ts.call('GET', `/api/v1/nodes/prod/node/${uuid}`, { token: tok.admin })).body.tags as { name: string }[]).map((t) => t.name);

function expectData(r: { status: number; body: any }) {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(Object.keys(r.body)).toEqual(['data']);
  expect(r.body.data).toBeTypeOf('string');
}

describe('GET /api/v1/tags/{env}', () => {
  it('lists the env’s tags by name, each with every Tag field and node_count', async () => {
    const tags = await list();
    expect(tags.map((t) => t.name)).toEqual(['laptops', 'pci', 'quarantine', 'servers']);
    for (const t of tags) {
      expectFields(t, { ...TAG_FIELDS, node_count: 'integer' });
      expect(t.created_at).toMatch(RFC3339);
    }
    const servers = tags.find((t) => t.name === 'servers')!;
    expect(servers.node_count).toBeGreaterThan(0);
    // node_count is the number of nodes carrying the tag.
    const envId = servers.environment_id;
    const db = ts.server.deps.db;
    const n = await db
      .selectFrom('node_tags')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tag_id', '=', servers.id)
      .executeTakeFirst();
    expect(servers.node_count).toBe(Number(n!.n));
    expect(tags.every((t) => t.environment_id === envId)).toBe(true);
  });

  it('is 401 without a token, 403 without access, 404 for an unknown env', async () => {
    expect((await ts.call('GET', '/api/v1/tags/prod')).status).toBe(401);
    const denied = await ts.call('GET', '/api/v1/tags/prod', { token: tok.devUser });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('forbidden');
    const unknown = await ts.call('GET', '/api/v1/tags/nope', { token: tok.admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });
});

describe('add', () => {
  it('creates a tag with defaults: random #rrggbb color, fas fa-tag icon, type 6 "tag"', async () => {
    const r = await act('add', { name: 'web-tier', description: 'Front-end web servers' });
    expectData(r);
    const t = await tagOf('web-tier');
    expect(t).toMatchObject({
      description: 'Front-end web servers',
      icon: 'fas fa-tag',
      tag_type: 6,
      custom_tag: 'tag',
      created_by: 'prod-admin',
      auto_tag: false,
      cohort: false,
      node_count: 0,
    });
    expect(t!.color).toMatch(/^#[0-9a-f]{6}$/);
    const [audit] = await auditRows(ts, 6);
    expect(audit).toMatchObject({ username: 'prod-admin', log_type: 6 });
    expect(audit.line).toContain('web-tier');
  });

  it('keeps the given color, icon and type; custom_tag is the type’s name or the custom text', async () => {
    expectData(await act('add', { name: 'team-blue', color: '#1A2B3C', icon: 'fas fa-users', tagtype: 4, custom: 'Team Blue' }));
    expect(await tagOf('team-blue')).toMatchObject({ color: '#1a2b3c', icon: 'fas fa-users', tag_type: 4, custom_tag: 'Team Blue' });
    expectData(await act('add', { name: 'os-linux', tagtype: 2 }));
    expect(await tagOf('os-linux')).toMatchObject({ tag_type: 2, custom_tag: 'platform' });
  });

  it('is 409 when the name exists in this env, but the same name is fine in another env', async () => {
    const r = await act('add', { name: 'web-tier' });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('conflict');
    expectData(await act('add', { name: 'web-tier' }, { env: 'staging', token: tok.admin }));
    expect((await list('prod', tok.admin)).filter((t) => t.name === 'web-tier')).toHaveLength(1);
  });

  it.each([
    ['no name', { description: 'x' }],
    ['a blank name', { name: '   ' }],
    ['a bad color', { name: 'bad-1', color: 'red' }],
    ['a short color', { name: 'bad-2', color: '#fff' }],
    ['an unknown tag type', { name: 'bad-3', tagtype: 3 }],
    ['type 4 without custom text', { name: 'bad-4', tagtype: 4 }],
    ['custom text on a non-custom type', { name: 'bad-5', custom: 'x' }],
    ['a tagtype of the wrong JSON type', { name: 'bad-6', tagtype: '6' }],
    ['a name of the wrong JSON type', { name: 7 }],
    ['another env named in the body', { name: 'bad-7', env: 'staging' }],
  ])('rejects %s with 400 and creates nothing', async (_, body) => {
    const before = await list('prod', tok.admin);
    const r = await act('add', body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ code: 'bad_request', error: expect.any(String) });
    expect(await list('prod', tok.admin)).toEqual(before);
  });

  it('rejects malformed JSON with 400 invalid_json', async () => {
    const before = await list('prod', tok.admin);
    const r = await ts.call('POST', '/api/v1/tags/prod/add', { token: tok.prodAdmin, rawBody: '{"name": "x"' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_json');
    expect(await list('prod', tok.admin)).toEqual(before);
  });
});

describe('edit', () => {
  it('changes only the given fields; tagtype is not reset when omitted', async () => {
    const before = (await tagOf('team-blue'))!;
    expectData(await act('edit', { name: 'team-blue', description: 'The blue team' }));
    const after = (await tagOf('team-blue'))!;
    expect(after).toMatchObject({
      description: 'The blue team',
      color: before.color,
      icon: before.icon,
      tag_type: 4,
      custom_tag: 'Team Blue',
    });
    expect(after.updated_at >= before.updated_at).toBe(true);
  });

  it('changes color, icon and type', async () => {
    expectData(await act('edit', { name: 'team-blue', color: '#00ff00', icon: 'fas fa-flag', tagtype: 6 }));
    expect(await tagOf('team-blue')).toMatchObject({
      color: '#00ff00',
      icon: 'fas fa-flag',
      tag_type: 6,
      custom_tag: 'tag',
      description: 'The blue team',
    });
    expectData(await act('edit', { name: 'team-blue', tagtype: 4, custom: 'Blue' }));
    expect(await tagOf('team-blue')).toMatchObject({ tag_type: 4, custom_tag: 'Blue' });
    expectData(await act('edit', { name: 'team-blue', custom: 'Blue Team' }));
    expect(await tagOf('team-blue')).toMatchObject({ tag_type: 4, custom_tag: 'Blue Team' });
  });

  it('is 404 for an unknown tag and 400 for bad values, changing nothing', async () => {
    const unknown = await act('edit', { name: 'no-such-tag', description: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const before = await tagOf('team-blue');
    for (const body of [
      { name: 'team-blue', color: 'blue' },
      { name: 'team-blue', tagtype: 9 },
      { name: 'team-blue', icon: '' },
      { name: 'team-blue' },
      { name: 'web-tier', tagtype: 4 },
      { name: 'team-blue', description: 42 },
    ]) {
      const r = await act('edit', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect(await tagOf('team-blue')).toEqual(before);
  });
});

describe('tag and untag', () => {
  it('applies a tag to nodes: the node read shows it and node_count counts it', async () => {
    const [a, b, c] = prodNodes;
    const r = await act('tag', { name: 'web-tier', uuids: [a, b, c.toUpperCase()] });
    expectData(r);
    expect((await tagOf('web-tier'))!.node_count).toBe(3);
    for (const u of [a, b, c]) expect(await nodeTags(u)).toContain('web-tier');
    // Applying again is harmless.
    expectData(await act('tag', { name: 'web-tier', uuids: [a] }));
    expect((await tagOf('web-tier'))!.node_count).toBe(3);
    const [audit] = await auditRows(ts, 6);
    expect(audit.line).toContain('web-tier');
  });

  it('with one unknown UUID is 404 and applies nothing', async () => {
    const [, , , d, e] = prodNodes;
    const r = await act('tag', { name: 'os-linux', uuids: [d, e, '00000000-0000-4000-a000-000000000000'] });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not_found');
    expect(r.body.error).toContain('00000000-0000-4000-a000-000000000000');
    expect(r.body.uuids).toEqual(['00000000-0000-4000-a000-000000000000']);
    expect((await tagOf('os-linux'))!.node_count).toBe(0);
    expect(await nodeTags(d)).not.toContain('os-linux');
    expect(await nodeTags(e)).not.toContain('os-linux');
  });

  it('with a node of another environment is 404 and applies nothing', async () => {
    const r = await act('tag', { name: 'os-linux', uuids: [prodNodes[3], stagingNode] });
    expect(r.status).toBe(404);
    expect((await tagOf('os-linux'))!.node_count).toBe(0);
  });

  it('needs a known tag and a non-empty uuids array of strings', async () => {
    expect((await act('tag', { name: 'no-such-tag', uuids: [prodNodes[0]] })).status).toBe(404);
    for (const body of [
      { name: 'os-linux' },
      { name: 'os-linux', uuids: [] },
      { name: 'os-linux', uuids: prodNodes[0] },
      { name: 'os-linux', uuids: [1, 2] },
    ]) {
      const r = await act('tag', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('bad_request');
    }
    expect((await tagOf('os-linux'))!.node_count).toBe(0);
  });

  it('untag removes the tag from the given nodes only', async () => {
    const [a, b] = prodNodes;
    expectData(await act('untag', { name: 'web-tier', uuids: [a] }));
    expect(await nodeTags(a)).not.toContain('web-tier');
    expect(await nodeTags(b)).toContain('web-tier');
    expect((await tagOf('web-tier'))!.node_count).toBe(2);
    const bad = await act('untag', { name: 'web-tier', uuids: [b, 'not-a-node'] });
    expect(bad.status).toBe(404);
    expect(await nodeTags(b)).toContain('web-tier');
  });
});

describe('remove', () => {
  it('deletes the tag and untags its nodes', async () => {
    const [, b] = prodNodes;
    expect(await nodeTags(b)).toContain('web-tier');
    const r = await act('remove', { name: 'web-tier' });
    expectData(r);
    expect(await tagOf('web-tier')).toBeUndefined();
    expect(await nodeTags(b)).not.toContain('web-tier');
    const links = await ts.server.deps.db
      .selectFrom('node_tags')
      .innerJoin('tags', 'tags.id', 'node_tags.tag_id')
      .select('tags.name')
      .where('tags.name', '=', 'web-tier')
      .execute();
    expect(links).toEqual([]);
    // The staging tag of the same name is untouched.
    expect(await tagOf('web-tier', 'staging')).toBeDefined();
  });

  it('is 404 for an unknown tag', async () => {
    const r = await act('remove', { name: 'web-tier' });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not_found');
  });
});

describe('errors', () => {
  it('an unknown action is 400 invalid_action', async () => {
    const r = await act('rename', { name: 'pci' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_action');
  });

  it('is 401 without a token, 403 below env admin, 404 for an unknown env; nothing changes', async () => {
    const before = await list('prod', tok.admin);
    expect((await ts.call('POST', '/api/v1/tags/prod/add', { body: { name: 'x1' } })).status).toBe(401);
    for (const t of [tok.analyst, tok.querier, tok.devUser]) {
      const r = await act('add', { name: 'x2' }, { token: t });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    expect((await act('remove', { name: 'pci' }, { env: 'staging' })).status).toBe(403);
    const unknown = await act('add', { name: 'x3' }, { env: 'nope', token: tok.admin });
    expect(unknown.status).toBe(404);
    expect(await list('prod', tok.admin)).toEqual(before);
  });
});
