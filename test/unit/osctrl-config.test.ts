// The osctrl flavour of the osquery configuration (issue 22), replaying what a real osctrl-api
// 0.5.4 answered (test/fixtures/osctrl-config): parts parsed from osctrl's JSON texts, the hash of
// the configuration osctrl-tls serves, If-Match checked before any write, dry runs answered
// without a write, and only the parts that change sent, as JSON texts.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { osctrlConfig } from '../../src/client/flavors/osctrl/config.js';
import type { HttpClient } from '../../src/client/http.js';
import { ApiError } from '../../src/errors.js';

const fixture = (name: string) => JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/osctrl-config', name), 'utf8'));
const env = fixture('environment-after.json');
const config = fixture('get-after.json');

function fake() {
  const sent: { method: string; path: string; body?: unknown }[] = [];
  const http = {
    async request(method: string, path: string, o: { body?: unknown } = {}) {
      sent.push({ method, path, body: o.body });
      if (method === 'GET' && path === 'api/v1/environments/config/cfg') return config;
      if (method === 'GET' && path === 'api/v1/environments/cfg') return env;
      if (method === 'PATCH' && path === 'api/v1/environments/config/cfg') return fixture('patch.json');
      throw new ApiError(404, 'not_found', `no fixture for ${method} ${path}`);
    },
  } as unknown as HttpClient;
  return { api: osctrlConfig(http), sent };
}

const hash = createHash('sha256').update(env.configuration).digest('hex');

describe('osquery configuration on osctrl', () => {
  it("reads the parts from osctrl's texts, with the hash of the configuration agents get", async () => {
    const { api } = fake();
    const v = await api.get('cfg');
    expect(v).toMatchObject({ environment: 'cfg', hash, schedule: { time: { query: 'SELECT unix_time FROM time', interval: 60 } } });
    expect(v.packs).toEqual({
      web: { queries: { procs: { query: 'SELECT pid, name FROM processes', interval: 300 } }, platform: 'linux' },
    });
    expect((v.decorators as { always: string[] }).always).toHaveLength(5);
    const agent = await api.agent('cfg');
    expect(agent.hash).toBe(hash);
    expect(agent.config.schedule).toEqual(v.schedule);
  });

  it('sends only the parts that change, as JSON texts; nothing for the same content', async () => {
    const { api, sent } = fake();
    const same = await api.put('cfg', 'schedule', { time: { interval: 60, query: 'SELECT unix_time FROM time' } }, { ifMatch: hash });
    expect(same.changed).toEqual([]);
    expect(sent.filter((r) => r.method === 'PATCH')).toEqual([]);
    const changed = await api.patch(
      'cfg',
      { schedule: { time: { query: 'SELECT unix_time FROM time', interval: 30 } }, options: {} },
      { ifMatch: hash },
    );
    expect(changed.changed).toEqual(['schedule']);
    const patch = sent.find((r) => r.method === 'PATCH')!;
    expect(Object.keys(patch.body as object)).toEqual(['schedule']);
    expect(JSON.parse((patch.body as { schedule: string }).schedule)).toEqual({
      time: { query: 'SELECT unix_time FROM time', interval: 30 },
    });
  });

  it('a stale If-Match is 409 and a dry run writes nothing', async () => {
    const { api, sent } = fake();
    await expect(api.put('cfg', 'options', { verbose: true }, { ifMatch: 'f'.repeat(64) })).rejects.toMatchObject({ status: 409 });
    const dry = await api.put('cfg', 'options', { verbose: true }, { dryRun: true, ifMatch: hash });
    expect(dry).toMatchObject({ dry_run: true, changed: ['options'], options: { verbose: true } });
    expect(sent.filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it("apply's server check asks osctrl nothing (it checks only JSON) and names no hash", async () => {
    const { api, sent } = fake();
    expect(await api.check('cfg', { options: { verbose: true } }, { ifMatch: hash })).toBe('');
    expect(sent).toEqual([]);
  });
});
