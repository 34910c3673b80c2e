// The launcher's code cache (bin/fleetctl.cjs): written once per user, build and Node, at the exit
// of a short command; a cache V8 rejects, someone else could have written, or that belongs to
// another build is replaced; a cache that cannot be written changes nothing a user sees.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/fleetctl.cjs');
const scratch = mkdtempSync(join(tmpdir(), 'fleetctl-cache-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const BUILD = readFileSync(join(import.meta.dirname, '../../dist/fleetctl.cjs.id'), 'utf8').trim();
const NAME = `${BUILD}-${process.version}-${process.arch}.v8cache`;

function fresh(): string {
  return mkdtempSync(join(scratch, 'home-'));
}

function run(cacheHome: string, args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cacheHome, FLEETCTL_CONFIG_DIR: join(cacheHome, 'config'), NO_COLOR: '1' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the launcher compiles the bundle with a code cache of its own', () => {
  it('writes it at the first command, private to the user, and reads it without writing again', () => {
    const home = fresh();
    const first = run(home, ['nodes', '--help']);
    expect(first.code, first.stderr).toBe(0);
    const file = join(home, 'fleetctl', NAME);
    expect(statSync(join(home, 'fleetctl')).mode & 0o777).toBe(0o700);
    const st = statSync(file);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.size).toBeGreaterThan(10_000);

    const second = run(home, ['nodes', '--help']);
    expect(second).toEqual(first);
    // Same file, same bytes: accepted by V8, so not written again.
    expect(statSync(file).ino).toBe(st.ino);
    expect(statSync(file).mtimeMs).toBe(st.mtimeMs);
  });

  it('replaces a cache V8 rejects, with the same output', () => {
    const home = fresh();
    const plain = run(fresh(), ['env', '--help']);
    mkdirSync(join(home, 'fleetctl'), { mode: 0o700 });
    const file = join(home, 'fleetctl', NAME);
    writeFileSync(file, Buffer.alloc(4096, 7), { mode: 0o600 });
    const r = run(home, ['env', '--help']);
    expect(r).toEqual(plain);
    expect(readFileSync(file).equals(Buffer.alloc(4096, 7))).toBe(false);
    expect(statSync(file).size).toBeGreaterThan(10_000);
  });

  it('does not read a cache others can write, and replaces it with a private one', () => {
    const home = fresh();
    expect(run(home, ['--help']).code).toBe(0);
    const file = join(home, 'fleetctl', NAME);
    chmodSync(file, 0o666);
    const before = statSync(file).ino;
    expect(run(home, ['--help']).code).toBe(0);
    expect(statSync(file).ino).not.toBe(before);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("removes other builds' caches when it writes its own", () => {
    const home = fresh();
    mkdirSync(join(home, 'fleetctl'), { mode: 0o700 });
    const stale = join(home, 'fleetctl', `0000000000000000-${process.version}-${process.arch}.v8cache`);
    writeFileSync(stale, 'old', { mode: 0o600 });
    expect(run(home, ['--help']).code).toBe(0);
    expect(readdirSync(join(home, 'fleetctl'))).toEqual([NAME]);
  });

  it('runs as before where no cache can be written', () => {
    const blocker = join(fresh(), 'a-file');
    writeFileSync(blocker, '');
    const plain = run(fresh(), ['nodes', '--help']);
    // XDG_CACHE_HOME under a regular file: neither the directory nor the cache can be made.
    const r = run(join(blocker, 'cache'), ['nodes', '--help']);
    expect(r).toEqual(plain);
  });

  it('a relative home directory gets no cache (not one in the working directory)', () => {
    const cwd = fresh();
    const r = spawnSync(process.execPath, [BIN, '--help'], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, HOME: '~', XDG_CACHE_HOME: '' },
    });
    expect(r.status).toBe(0);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('a server or a long command writes none (its code would weigh on every short start)', () => {
    const home = fresh();
    expect(run(home, ['dev', '--help']).code).toBe(0);
    expect(run(home, ['server', '--help']).code).toBe(0);
    expect(run(home, ['nodes', 'list', '--all', '--help']).code).toBe(0);
    expect(existsSync(join(home, 'fleetctl'))).toBe(false);
  });
});
