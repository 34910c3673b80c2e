// The package as users get it: `npm pack`, then a global install into a temporary prefix.
// `fleetctl` must be on PATH, `man fleetctl` must find the installed pages, and completions
// must come out of the installed binary. Install scripts are skipped (better-sqlite3 would
// compile for a minute): the CLI must not need them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
let dir: string;
let prefix: string;
let packed: { filename: string; files: { path: string }[] }[];

const run = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  execFileSync(cmd, args, { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-pack-'));
  prefix = join(dir, 'prefix');
  // --ignore-scripts: dist/ was built by `npm test` already; prepare would rebuild it.
  packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  run('npm', ['install', '--global', '--prefix', prefix, '--ignore-scripts', '--no-audit', '--no-fund', join(dir, tarball)]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm pack and a global install', () => {
  it('packs the built CLI, the completions and every man page, and nothing from src/ or test/', () => {
    // The package's own name: `fleetctl` on the registry is another product (Fleet DM's CLI).
    expect(packed[0].filename).toMatch(/^osquery-fleetctl-\d+\.\d+\.\d+\.tgz$/);
    const files = packed[0].files.map((f) => f.path);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man: string[] };
    for (const f of [
      'bin/fleetctl.cjs',
      'dist/fleetctl.cjs',
      'dist/fleetctl.cjs.id',
      'completions/fleetctl.bash',
      'completions/_fleetctl',
      'completions/fleetctl.fish',
      ...pkg.man,
    ]) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.endsWith('.db'))).toEqual([]);
  });

  it('puts fleetctl on PATH', () => {
    expect(run(join(prefix, 'bin', 'fleetctl'), ['--version']).trim()).toBe(
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
    );
  });

  it('man fleetctl finds and renders the installed page', () => {
    const env = { MANPATH: join(prefix, 'share', 'man'), MANWIDTH: '80' };
    // man -w resolves npm's symlink from share/man/man1 into the installed package.
    expect(run('man', ['-w', 'fleetctl'], env).trim()).toMatch(new RegExp(`^${prefix}/.*fleetctl\\.1$`));
    const page = run('man', ['fleetctl'], { ...env, MANPAGER: 'cat', PAGER: 'cat' });
    expect(page).toMatch(/EXIT STATUS/);
    expect(page).toMatch(/ENVIRONMENT/);
    expect(run('man', ['-w', 'fleetctl-nodes'], env).trim()).toMatch(/fleetctl-nodes\.1$/);
  });

  it('the installed binary prints the checked-in completions', () => {
    const out = run(join(prefix, 'bin', 'fleetctl'), ['completion', 'bash'], { HOME: '~' });
    expect(out).toBe(readFileSync(join(ROOT, 'completions', 'fleetctl.bash'), 'utf8'));
  });
});
