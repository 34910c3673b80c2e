// `fleetctl carves ...` end to end against a real `fleetctl server --dev` process (demo carves in
// every status); state is read back with raw API calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';
import type { CarveDetail, CarveQuery, Page } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;

async function stored(name: string, env = 'prod'): Promise<CarveDetail> {
  const r = await apiCall(server.url, 'GET', `/api/v1/carves/${env}/${encodeURIComponent(name)}`, { token });
  expect(r.status).toBe(200);
  return r.body as CarveDetail;
}

async function allCarves(env = 'prod', status?: string): Promise<CarveQuery[]> {
  const r = await apiCall(server.url, 'GET', `/api/v1/carves/${env}?page_size=500${status ? `&status=${status}` : ''}`, { token });
  expect(r.status).toBe(200);
  return (r.body as Page<CarveQuery>).items;
}

/** A carve of the demo data in that status (the seed has every status in every env). */
async function carveIn(status: string, env = 'prod'): Promise<string> {
  const c = (await allCarves(env)).find((x) => x.carve_status === status);
  if (!c) throw new Error(`no ${status} carve in ${env}`);
  return c.name;
}

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('carves list', () => {
  it('prints the carves as JSON, newest first, and filters by status', async () => {
    const r = await cli.run(['carves', 'list', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const list = JSON.parse(r.stdout) as CarveQuery[];
    expect(list.map((c) => c.name)).toEqual((await allCarves()).slice(0, 50).map((c) => c.name));
    const created = list.map((c) => c.created_at);
    expect(created).toEqual([...created].sort().reverse());

    const done = await cli.run(['carves', 'list', '--status', 'completed', '--all', '-o', 'json']);
    const completed = JSON.parse(done.stdout) as CarveQuery[];
    expect(completed.length).toBeGreaterThan(0);
    expect(new Set(completed.map((c) => c.carve_status))).toEqual(new Set(['COMPLETED']));

    const bad = await cli.run(['carves', 'list', '--status', 'finished']);
    expect(bad.exitCode).toBe(2);
  });

  it('searches names and paths, and --limit stops early', async () => {
    const path = (await allCarves())[0].path;
    const r = await cli.run(['carves', 'list', '-q', path, '-o', 'json']);
    const hits = JSON.parse(r.stdout) as CarveQuery[];
    expect(hits.length).toBeGreaterThan(0);
    for (const c of hits) expect(`${c.name} ${c.path}`.toLowerCase()).toContain(path.toLowerCase());
    const lim = await cli.run(['carves', 'list', '--limit', '2', '-o', 'json']);
    expect(JSON.parse(lim.stdout)).toHaveLength(2);
  });

  it('piped: a TSV table', async () => {
    const r = await cli.run(['carves', 'list', '--env', 'staging']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('NAME\tSTATUS\tPATH\tCREATOR\tNODES\tCREATED\tEXPIRES');
    expect(lines.length).toBe((await allCarves('staging')).length + 1);
    expect(lines[1]).toMatch(/^\S+\t(ACTIVE|PENDING|COMPLETED|EXPIRED|DELETED)\t\/\S*\t\S+\t\d+\/\d+\t\d{4}-/);
  });

  it('exits 5 for a user without carve access', async () => {
    const analyst = new Cli();
    await analyst.login(server.url, 'analyst');
    const r = await analyst.run(['carves', 'list']);
    expect(r.exitCode).toBe(5);
    analyst.cleanup();
  });
});

describe('carves show', () => {
  it('the carve names and searches in the --help examples exist in the demo fleet, so the examples work as written', async () => {
    let help = '';
    for (const v of [[], ['list'], ['show'], ['delete'], ['expire'], ['complete'], ['archive']])
      help += (await cli.run(['carves', ...v, '--help'])).stdout;
    const refs = [...help.matchAll(/\$ fleetctl carves (?:show|delete|expire|complete|archive) (\S+)(?:.*--env (\S+))?/g)].map(
      (m) => [m[1], m[2] ?? 'prod'] as const,
    );
    expect(refs.length).toBeGreaterThan(5);
    for (const [name, env] of refs)
      expect(
        (await allCarves(env)).map((c) => c.name),
        `${name} in ${env}`,
      ).toContain(name);
    for (const m of help.matchAll(/\$ fleetctl carves list (--status \S+ -q \S+)/g)) {
      const r = await cli.run(['carves', 'list', ...m[1].split(' '), '-o', 'json']);
      expect(r.exitCode).toBe(0);
      expect(JSON.parse(r.stdout), m[1]).not.toEqual([]);
    }
  });

  it('gives {query, files} as JSON, and a key/value view plus a files table piped', async () => {
    const name = await carveIn('PENDING');
    const json = await cli.run(['carves', 'show', name, '-o', 'json']);
    expect(json.exitCode).toBe(0);
    const detail = JSON.parse(json.stdout) as CarveDetail;
    expect(detail).toEqual(await stored(name));
    expect(detail.files.length).toBeGreaterThan(0);

    const plain = await cli.run(['carves', 'show', name]);
    expect(plain.exitCode).toBe(0);
    const [head, files] = plain.stdout.split('\n\n');
    expect(head).toContain(`name\t${name}\n`);
    expect(head).toContain('carve_status\tPENDING\n');
    expect(head).toContain(`query\t${detail.query.query}`);
    const rows = files.trimEnd().split('\n');
    expect(rows[0]).toBe('NODE\tSESSION\tPATH\tSTATUS\tBLOCKS\tSIZE\tCOMPRESSION\tARCHIVED\tCREATED\tCOMPLETED\tNOTE');
    expect(rows).toHaveLength(detail.files.length + 1);
  });

  it('exits 3 for an unknown carve', async () => {
    const r = await cli.run(['carves', 'show', 'no-such-carve']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/^error: .*\(not_found, HTTP 404\)\n$/);
  });
});

describe('carves actions', () => {
  it('complete and archive change what `carves show` reports', async () => {
    const name = await carveIn('PENDING');
    const r = await cli.run(['carves', 'complete', name]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`Completed carve ${name} in prod\n`);
    const shown = await cli.run(['carves', 'show', name, '--jq', '.query.carve_status']);
    expect(shown.stdout).toBe('COMPLETED\n');

    const a = await cli.run(['carves', 'archive', name, '-o', 'json']);
    expect(a.exitCode).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ name, env: 'prod', action: 'archive' });
    const files = (await stored(name)).files;
    for (const f of files) expect(f.archived).toBe(f.status === 'COMPLETED');
  });

  it('delete and expire without --yes and without a terminal exit 2 and change nothing', async () => {
    const name = await carveIn('ACTIVE');
    const before = await stored(name);
    for (const action of ['delete', 'expire']) {
      const r = await cli.run(['carves', action, name]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/refusing to proceed without confirmation: .* carve .* in prod; pass --yes/);
    }
    expect(await stored(name)).toEqual(before);
  });

  it('expire --yes and delete --yes set the status; a deleted carve cannot be acted on (exit 6)', async () => {
    const name = await carveIn('ACTIVE');
    const e = await cli.run(['carves', 'expire', name, '--yes']);
    expect(e.exitCode).toBe(0);
    expect((await cli.run(['carves', 'show', name, '--jq', '.query.carve_status'])).stdout).toBe('EXPIRED\n');
    const d = await cli.run(['carves', 'delete', name, '--yes']);
    expect(d.exitCode).toBe(0);
    expect(d.stderr).toBe(`Carve ${name} deleted: 0 files (0 blocks) removed from the server (environment prod)\n`);
    expect((await stored(name)).query.carve_status).toBe('DELETED');
    expect((await allCarves('prod', 'deleted')).map((c) => c.name)).toContain(name);
    const again = await cli.run(['carves', 'complete', name]);
    expect(again.exitCode).toBe(6);
    expect((await stored(name)).query.carve_status).toBe('DELETED');
  });

  it('delete is also `rm`, like the delete/remove verbs of the other groups', async () => {
    const name = await carveIn('PENDING', 'staging');
    const r = await cli.run(['carves', 'rm', name, '--env', 'staging', '--yes']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(
      new RegExp(`^Carve ${name} deleted: \\d+ files? \\(\\d+ blocks?\\) removed from the server \\(environment staging\\)\\n$`),
    );
    expect((await stored(name, 'staging')).query.carve_status).toBe('DELETED');
  });

  it('delete removes what was carved (issue 29): downloaded before, after it the download exits 3 saying the files are gone', async () => {
    const name = await carveIn('COMPLETED', 'dev');
    const { files } = await stored(name, 'dev');
    const blocks = files.reduce((n, f) => n + f.completed_blocks, 0);
    expect(files.length).toBeGreaterThan(0);
    const cwd = mkdtempSync(join(tmpdir(), 'carve-delete-'));
    try {
      const before = await cli.run(['carves', 'download', name, '--env', 'dev'], { cwd });
      expect(before.exitCode, before.stderr).toBe(0);
      expect(readdirSync(cwd).filter((f) => f.endsWith('.tar'))).toHaveLength(files.length);
      const d = await cli.run(['carves', 'delete', name, '--env', 'dev', '--yes']);
      expect(d.exitCode).toBe(0);
      expect(d.stderr).toBe(
        `Carve ${name} deleted: ${files.length} file${files.length === 1 ? '' : 's'} (${blocks} blocks) removed from the server (environment dev)\n`,
      );
      const after = await cli.run(['carves', 'download', name, '--env', 'dev', '--force'], { cwd });
      expect(after.exitCode).toBe(3);
      expect(after.stdout).toBe('');
      expect(after.stderr).toBe(`error: carve ${name} was deleted: its files were removed from the server\n`);
      expect((await stored(name, 'dev')).files).toEqual([]);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('has examples in --help for every verb', async () => {
    for (const v of ['list', 'show', 'delete', 'expire', 'complete', 'archive']) {
      const r = await cli.run(['carves', v, '--help']);
      expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl carves /);
    }
  });
});
