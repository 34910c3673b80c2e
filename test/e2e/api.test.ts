// `fleetctl api` end to end against a real `fleetctl server --dev` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';
import type { Node, Page, TagWithCount } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;
let dir: string;

const tag = async (name: string) =>
  ((await apiCall(server.url, 'GET', '/api/v1/tags/prod', { token })).body as TagWithCount[]).find((t) => t.name === name);

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-api-'));
});

afterAll(async () => {
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
  await server?.stop();
});

describe('fleetctl api GET', () => {
  it('`api GET /api/v1/stats` prints the same object as `stats -o json`', async () => {
    const a = await cli.run(['api', 'GET', '/api/v1/stats']);
    const s = await cli.run(['stats', '-o', 'json']);
    expect(a.exitCode).toBe(0);
    expect(a.stderr).toBe('');
    expect(JSON.parse(a.stdout)).toEqual(JSON.parse(s.stdout));
    expect(a.stdout).toBe(s.stdout);
    // PATH without the slash, method by default, and --jq.
    expect(JSON.parse((await cli.run(['api', 'api/v1/stats'])).stdout)).toEqual(JSON.parse(s.stdout));
    expect((await cli.run(['api', 'get', '/api/v1/stats', '--jq', '.total_nodes'])).stdout).toBe('2200\n');
  });

  it('-f fields become query parameters for GET', async () => {
    const r = await cli.run(['api', 'GET', '/api/v1/nodes/prod', '-f', 'status=inactive', '-f', 'platform=other', '-f', 'page_size=5']);
    expect(r.exitCode).toBe(0);
    const page = JSON.parse(r.stdout) as Page<Node>;
    expect(page.page_size).toBe(5);
    expect(page.items.length).toBe(5);
    const direct = (await apiCall(server.url, 'GET', '/api/v1/nodes/prod?status=inactive&platform=other&page_size=5', { token }))
      .body as Page<Node>;
    expect(page).toEqual(direct);
  });

  it('--paginate prints every item of every page as one array', async () => {
    const total = ((await apiCall(server.url, 'GET', '/api/v1/nodes/prod?status=inactive&page_size=1', { token })).body as Page<Node>)
      .total_items;
    expect(total).toBeGreaterThan(20);
    const r = await cli.run(['api', '/api/v1/nodes/prod', '-f', 'status=inactive', '-f', 'page_size=20', '--paginate']);
    expect(r.exitCode).toBe(0);
    const items = JSON.parse(r.stdout) as Node[];
    expect(items).toHaveLength(total);
    expect(new Set(items.map((n) => n.uuid)).size).toBe(total);
    const jsonl = await cli.run(['api', '/api/v1/nodes/prod', '-f', 'status=inactive', '--paginate', '-o', 'jsonl', '--fields', 'uuid']);
    expect(jsonl.stdout.trimEnd().split('\n')).toHaveLength(total);
    const post = await cli.run(['api', 'POST', '/api/v1/stats', '--paginate']);
    expect(post.exitCode).toBe(2);
  });
});

describe('fleetctl api with a body', () => {
  it('-f/-F fields make the JSON body: a tag is created and applied', async () => {
    const add = await cli.run([
      'api',
      'POST',
      '/api/v1/tags/prod/add',
      '-f',
      'name=via-api',
      '-f',
      'description=made by api',
      '-F',
      'tagtype=4',
      '-f',
      'custom=42',
    ]);
    expect(add.exitCode).toBe(0);
    expect(JSON.parse(add.stdout)).toHaveProperty('data');
    expect(await tag('via-api')).toMatchObject({ description: 'made by api', tag_type: 4, custom_tag: '42' });

    const nodes = ((await apiCall(server.url, 'GET', '/api/v1/nodes/prod?page_size=2', { token })).body as Page<Node>).items;
    const apply = await cli.run([
      'api',
      'POST',
      'api/v1/tags/prod/tag',
      '-f',
      'name=via-api',
      '-f',
      `uuids[]=${nodes[0].uuid}`,
      '-f',
      `uuids[]=${nodes[1].uuid}`,
    ]);
    expect(apply.exitCode).toBe(0);
    expect((await tag('via-api'))?.node_count).toBe(2);
  });

  it('--input reads the JSON body from a file or stdin', async () => {
    const file = join(dir, 'tag.json');
    writeFileSync(file, JSON.stringify({ name: 'from-file', description: 'file body' }));
    expect((await cli.run(['api', 'POST', '/api/v1/tags/prod/add', '--input', file])).exitCode).toBe(0);
    expect(await tag('from-file')).toMatchObject({ description: 'file body' });
    const r = await cli.run(['api', 'POST', '/api/v1/tags/prod/edit', '--input', '-'], {
      input: '{"name":"from-file","description":"stdin body"}',
    });
    expect(r.exitCode).toBe(0);
    expect(await tag('from-file')).toMatchObject({ description: 'stdin body' });
    const text = join(dir, 'description.txt');
    writeFileSync(text, 'read by -F @file');
    expect((await cli.run(['api', 'POST', '/api/v1/tags/prod/edit', '-f', 'name=from-file', '-F', `description=@${text}`])).exitCode).toBe(
      0,
    );
    expect(await tag('from-file')).toMatchObject({ description: 'read by -F @file' });
    const bad = await cli.run(['api', 'POST', '/api/v1/tags/prod/add', '--input', '-'], { input: '{oops' });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--input: not valid JSON/);
  });

  it('--debug does not log enroll values (the secret, flags, scripts); stdout still has what was asked', async () => {
    const secret = (await apiCall(server.url, 'GET', '/api/v1/environments/prod/enroll/secret', { token })).body.data as string;
    expect(secret).toMatch(/^[0-9a-f]{16,}$/);
    for (const target of ['secret', 'enroll.sh']) {
      const r = await cli.run(['--debug', 'api', `/api/v1/environments/prod/enroll/${target}`]);
      expect(r.exitCode).toBe(0);
      if (target === 'secret') expect(JSON.parse(r.stdout)).toEqual({ data: secret });
      expect(r.stderr).toMatch(/^\[debug\] < 200 \(\d+ ms\) \[\d+ bytes, redacted\]$/m);
      expect(r.stderr).not.toContain(secret);
    }
  });
});

describe('fleetctl api errors', () => {
  it('404: the error body on stdout as JSON, the error line on stderr, exit 3', async () => {
    const r = await cli.run(['api', 'GET', '/api/v1/nodes/prod/node/no-such-node']);
    expect(r.exitCode).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 'not_found', error: expect.stringContaining('no-such-node') });
    expect(r.stderr).toMatch(/^error: .*no-such-node.*\(not_found, HTTP 404\)\n$/);
  });

  it('keeps the exit codes: 409 -> 6, 400 -> 1, 500 (a bare JSON string) -> 1, 403 -> 5, 401 -> 4', async () => {
    const dup = await cli.run(['api', 'POST', '/api/v1/tags/prod/add', '-f', 'name=pci']);
    expect(dup.exitCode).toBe(6);
    expect(JSON.parse(dup.stdout).code).toBe('conflict');
    const bad = await cli.run(['api', 'POST', '/api/v1/tags/prod/frobnicate', '-f', 'name=x']);
    expect(bad.exitCode).toBe(1);
    expect(JSON.parse(bad.stdout).code).toBe('invalid_action');
    const internal = await cli.run(['api', 'GET', '/error']);
    expect(internal.exitCode).toBe(1);
    expect(JSON.parse(internal.stdout)).toBe('internal error');
    const analyst = new Cli();
    await analyst.login(server.url, 'analyst');
    const denied = await analyst.run(['api', 'POST', '/api/v1/tags/prod/add', '-f', 'name=nope']);
    expect(denied.exitCode).toBe(5);
    expect(JSON.parse(denied.stdout).code).toBe('forbidden');
    const anon = await analyst.run(['api', 'GET', '/api/v1/stats'], { env: { FLEETCTL_TOKEN: 'not-a-jwt' } });
    expect(anon.exitCode).toBe(4);
    expect(JSON.parse(anon.stdout).code).toBe('unauthorized');
    analyst.cleanup();
    expect(await tag('nope')).toBeUndefined();
  });

  it('usage errors exit 2 before any request: unknown method, malformed field, another host', async () => {
    expect((await cli.run(['api', 'FETCH', '/api/v1/stats'])).exitCode).toBe(2);
    expect((await cli.run(['api', 'POST', '/api/v1/tags/prod/add', '-f', 'name'])).exitCode).toBe(2);
    const other = await cli.run(['api', 'GET', 'https://example.com/api/v1/stats']);
    expect(other.exitCode).toBe(2);
    expect(other.stderr).toMatch(/is not on http:\/\/127\.0\.0\.1/);
    expect((await cli.run(['api', '--help'])).stdout).toMatch(/Examples:\n {2}\$ fleetctl api /);
  });
});
