// --help as a user reads it: a group lists its verbs before anything else, global flags are listed
// once by `fleetctl options` (not under every command), and descriptions flow as paragraphs.
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { Cli } from '../helpers/cli.js';

const cli = new Cli();

describe('help', () => {
  it('a group lists its verbs first and points to `fleetctl options` instead of repeating global flags', async () => {
    const r = await cli.run(['nodes', '--help']);
    expect(r.exitCode).toBe(0);
    const sections = r.stdout.split('\n').filter((l) => /^[A-Z][A-Za-z ]+:$/.test(l));
    expect(sections).toEqual(['Commands:', 'Options:', 'Examples:']);
    expect(r.stdout).not.toMatch(/--jq |--fields |Global Options/);
    expect(r.stdout).toContain('Run `fleetctl options` for the global options');
    expect(r.stdout.split('\n').length).toBeLessThan(25);
  });

  it('`fleetctl options` lists every global flag', async () => {
    const r = await cli.run(['options']);
    expect(r.exitCode).toBe(0);
    for (const flag of [
      '--url',
      '--env',
      '--profile',
      '--output',
      '--json',
      '--fields',
      '--jq',
      '--no-headers',
      '--timeout',
      '--insecure',
      '--debug',
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  it('server --help shows the server options, not output flags', async () => {
    const r = await cli.run(['server', '--help']);
    expect(r.stdout).toContain('--listen');
    expect(r.stdout).not.toMatch(/--jq |--fields /);
  });

  it('server --help explains the agent listener and --dev-agents (issue 20)', async () => {
    const text = (await cli.run(['server', '--help'])).stdout.replace(/\s+/g, ' '); // flowed at 80 columns
    expect(text).toMatch(/the agent listener \(--agent-listen, osquery agents' TLS API/);
    expect(text).toMatch(/--dev opens the agent listener with a self-signed certificate on --listen's port \+ 1/);
    expect(text).toMatch(/--dev-agents N adds N simulated osquery agents/);
    expect(text).toContain('--target tag:live-agents');
  });

  it('query run --help says how targets combine and what the exit codes mean (issue 20)', async () => {
    const text = (await cli.run(['query', 'run', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/Several targets are a union: a node matching any of them is targeted/);
    expect(text).toMatch(/Exit 0 when every target answered without an error, 9 when some did not answer or answered with an error/);
    expect(text).toMatch(/--exit stop as soon as every online target has answered/);
    expect(text).toMatch(/--detach/);
  });

  it('descriptions are flowed paragraphs: no ragged line at 80 columns', async () => {
    const r = await cli.run(['sinks', 'list', '--help'], { env: { COLUMNS: '80' } });
    const description = r.stdout.split('\n\n')[1];
    const lines = description.split('\n');
    expect(lines.length).toBeGreaterThan(1);
    // every line but the last is filled to near the width: no line broken early by a hard newline
    for (const l of lines.slice(0, -1)) expect(l.length).toBeGreaterThan(60);
    expect(lines.every((l) => l.length <= 80)).toBe(true);
  });

  it('global flags still work after a verb', async () => {
    // --url and --env after the verb pick the server and environment; --json the output.
    const paths: string[] = [];
    const stub = createServer((req, res) => {
      paths.push(req.url ?? '');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ items: [], page: 1, page_size: 50, total_items: 0, total_pages: 0 }));
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;
      const r = await cli.run(['nodes', 'list', '--json', '--url', url, '--env', 'staging'], { env: { FLEETCTL_TOKEN: 'x' } });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([]);
      expect(paths).toHaveLength(1);
      expect(paths[0]).toMatch(/^\/api\/v1\/nodes\/staging(\?|$)/);
    } finally {
      await new Promise((r) => stub.close(r));
    }
  });
});

describe('a first run, before any login', () => {
  // Every verb that talks to the server, from a fresh config directory with no FLEETCTL_* variable.
  const verbs = [
    ['nodes', 'list'],
    ['nodes', 'show', 'x'],
    ['stats'],
    ['users', 'list'],
    ['users', 'me'],
    ['env', 'list'],
    ['env', 'show', 'prod'],
    ['tags', 'list'],
    ['tags', 'show', 'pci'],
    ['carves', 'list'],
    ['audit', 'list'],
    ['sinks', 'list'],
    ['settings', 'list', 'tls'],
    ['mfa', 'status'],
    ['enroll', 'show', 'prod', 'secret'],
    ['api', '/api/v1/stats'],
  ];
  it.each(verbs)('%s %s says "not logged in", exit 4, with the login command', async (...args) => {
    const fresh = new Cli();
    const r = await fresh.run(args.filter((a): a is string => typeof a === 'string'));
    fresh.cleanup();
    expect(r.exitCode).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('error: not logged in\nhint: run `fleetctl login --url URL --env ENV`\n');
  });
});
