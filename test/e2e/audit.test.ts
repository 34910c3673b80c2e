// `fleetctl audit list` end to end against a real `fleetctl server --dev` process; --follow runs
// in a pseudo-terminal so Ctrl-C is a real SIGINT from the terminal.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiLogin, apiToken, runInPty } from '../helpers/admin-cli.js';
import type { AuditLogEntry, Page } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;
let loginAt: string;

const PROD_UUID = '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a01';
const STAGING_UUID = '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a02';

async function listJson(args: string[], c = cli): Promise<AuditLogEntry[]> {
  const r = await c.run(['audit', 'list', ...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout) as AuditLogEntry[];
}

beforeAll(async () => {
  server = await startServerProcess();
  cli = new Cli();
  loginAt = new Date(Date.now() - 1000).toISOString();
  await cli.login(server.url);
  token = await apiToken(server.url);
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('audit list', () => {
  it('--json shows the login just made, newest first', async () => {
    const list = await listJson([]);
    expect(list.length).toBeGreaterThan(0);
    const mine = list.find((e) => e.username === 'admin' && e.log_type === 1 && e.created_at >= loginAt);
    expect(mine).toMatchObject({ service: expect.any(String), severity: 1, env_uuid: PROD_UUID, source_ip: '127.0.0.1' });
    expect(mine!.line).toMatch(/login/i);
    const ids = list.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it('filters by --user, --env and -q on the server', async () => {
    await apiLogin(server.url, 'ci-bot', 'test-password-1', 'staging');
    const byUser = await listJson(['--user', 'ci-bot', '--all']);
    expect(byUser.length).toBeGreaterThan(0);
    for (const e of byUser) expect(e.username).toBe('ci-bot');
    const byEnv = await listJson(['--env', 'staging', '--all']);
    expect(byEnv.length).toBeGreaterThan(0);
    for (const e of byEnv) expect(e.env_uuid).toBe(STAGING_UUID);
    const search = await listJson(['-q', 'LOGIN', '--all']);
    expect(search.length).toBeGreaterThan(0);
    for (const e of search) expect(e.line.toLowerCase()).toContain('login');
    const unknownEnv = await cli.run(['audit', 'list', '--env', 'nosuch']);
    expect(unknownEnv.exitCode).toBe(3);
  });

  it('--all walks every page, --limit stops early', async () => {
    const api = (await apiCall(server.url, 'GET', '/api/v1/audit-logs?page_size=1', { token })).body as Page<AuditLogEntry>;
    const all = await listJson(['--all', '--page-size', '7']);
    expect(all.length).toBeGreaterThanOrEqual(api.total_items);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    expect(await listJson(['--limit', '3'])).toHaveLength(3);
  });

  it('piped: TSV with the log type and severity by name and the env by name', async () => {
    const r = await cli.run(['audit', 'list', '--user', 'admin', '-q', 'login ok']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('ID\tTIME\tUSER\tSERVICE\tTYPE\tSEVERITY\tENV\tLINE');
    expect(lines[1]).toMatch(/^\d+\t\d{4}-\d{2}-\d{2}T\S+\tadmin\t\S+\tlogin\tinfo\tprod\t.*login/);
  });

  it('shows a user who is not a super-admin only their own entries', async () => {
    const analyst = new Cli();
    await analyst.login(server.url, 'analyst');
    const list = await listJson(['--all'], analyst);
    expect(list.length).toBeGreaterThan(0);
    for (const e of list) expect(e.username).toBe('analyst');
    analyst.cleanup();
  });

  it('--follow refuses yaml and has examples in --help', async () => {
    const r = await cli.run(['audit', 'list', '--follow', '-o', 'yaml']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--follow prints a stream/);
    expect((await cli.run(['audit', 'list', '--help'])).stdout).toMatch(/Examples:\n {2}\$ fleetctl audit list/);
  });
});

describe('audit show', () => {
  it("shows one entry by the id that audit list prints; another user's entry is 404 for a non-admin", async () => {
    const [first] = await listJson(['--limit', '1']);
    const r = await cli.run(['audit', 'show', String(first.id), '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(first);
    expect((await cli.run(['audit', 'show', '99999999'])).exitCode).toBe(3);
    expect((await cli.run(['audit', 'show', 'abc'])).exitCode).toBe(2);
    const analyst = new Cli();
    await analyst.login(server.url, 'analyst');
    const adminEntry = (await listJson(['--user', 'admin', '--limit', '1']))[0];
    const denied = await analyst.run(['audit', 'show', String(adminEntry.id)]);
    expect(denied.exitCode).toBe(3);
    analyst.cleanup();
  });
});

describe('audit list --follow', () => {
  it('prints the backlog oldest first, then new entries as JSON lines until Ctrl-C (exit 130)', async () => {
    const newest = (await listJson(['--limit', '2'])).reverse();
    const pty = runInPty(cli, ['audit', 'list', '--follow', '--limit', '2', '--interval', '300ms', '-o', 'json']);
    await pty.expect(new RegExp(`"id":${newest[1].id},`));
    const backlog = pty
      .output()
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as AuditLogEntry);
    expect(backlog.map((e) => e.id)).toEqual(newest.map((e) => e.id));

    // Two new entries: a failed and a good login.
    expect((await apiLogin(server.url, 'analyst', 'wrong-password')).status).toBe(401);
    expect((await apiLogin(server.url, 'querier')).status).toBe(200);
    await pty.expect(/"username":"querier"/);
    const lines = pty
      .output()
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as AuditLogEntry);
    const fresh = lines.slice(2);
    expect(fresh.map((e) => e.username)).toEqual(['analyst', 'querier']);
    expect(fresh[0].severity).toBeGreaterThan(1); // a failed login is not "info"
    expect(fresh[0].id).toBeLessThan(fresh[1].id);
    expect(new Set(lines.map((e) => e.id)).size).toBe(lines.length); // nothing printed twice

    pty.line('\u0003');
    const { exitCode, output } = await pty.done();
    expect(exitCode).toBe(130);
    expect(output).not.toMatch(/error|at .*\.js/i);
  });
});

describe('audit list -q past 1,000 matches', () => {
  it('says "at least" at a terminal (the server counted only so far), and --all still lists every entry', async () => {
    // A server of its own (e2e files run on SQLite; test/server/audit.test.ts covers both
    // databases): 1,100 matching rows written straight into its database.
    const dir = mkdtempSync(join(tmpdir(), 'fleetctl-audit-'));
    const db = join(dir, 'fleet.db');
    const s = await startServerProcess(['--dev', '--dev-password', DEV_PASSWORD, '--db', db]);
    const c = new Cli();
    try {
      const now = new Date().toISOString();
      const values = Array.from({ length: 1100 }, (_, i) => `('${now}', 'bulk row ${i}', 9, 1, 'api', 'ci-bot')`);
      const file = new Database(db);
      file.pragma('busy_timeout = 10000');
      for (let i = 0; i < values.length; i += 250)
        file.exec(
          `insert into audit_logs (created_at, line, log_type, severity, service, username) values ${values.slice(i, i + 250).join(', ')}`,
        );
      file.close();
      await c.login(s.url);
      const pty = runInPty(c, ['audit', 'list', '-q', 'bulk row']);
      await pty.expect(/Showing 1-50 of at least 1000 entries \(page 1 of 20 or more\); next: --page 2, or --all/);
      expect((await pty.done()).exitCode).toBe(0);
      const all = await listJson(['-q', 'bulk row', '--all', '--page-size', '400'], c);
      expect(all).toHaveLength(1100);
      expect(new Set(all.map((e) => e.line)).size).toBe(1100);
    } finally {
      c.cleanup();
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
