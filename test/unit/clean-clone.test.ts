// A fresh clone must carry everything its tests need, and nothing may send users to the npm
// registry's `fleetctl` (another product). Plain text checks over the files of the repository.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else out.push(p);
  }
  return out;
}

const read = (p: string) => readFileSync(p, 'utf8');
const rel = (p: string) => relative(ROOT, p);
// Built from parts so this file does not match itself.
const SHARED = ['..', 'shared'].join('/');
const WORK_SHARED = ['', 'work', 'shared'].join('/');

describe('clean clone', () => {
  it('no test, source, script or CI file reads the shared folder beside the clone (outside the repository)', () => {
    const all = ['test', 'src', 'scripts', 'bin', '.ci', 'bench'].flatMap((d) => files(join(ROOT, d)));
    all.push(join(ROOT, 'package.json'), join(ROOT, 'vitest.config.ts'));
    // The one exception: CI points OSQUERYD at the real agent beside the clone when it is there
    // (the real-agent tests read only the variable, and skip without it outside CI).
    const allowed = (p: string, line: string) => rel(p) === '.ci/run' && /OSQUERYD/.test(line) && line.includes(`${SHARED}/peers/osqueryd`);
    const offenders = all.filter((p) =>
      read(p)
        .split('\n')
        .some((line) => (line.includes(SHARED) || line.includes(WORK_SHARED)) && !allowed(p, line)),
    );
    expect(offenders.map(rel)).toEqual([]);
  });

  it('the keychain session helper is in the repository and executable', () => {
    const p = join(ROOT, 'test/fixtures/keyring-session.sh');
    expect(statSync(p).mode & 0o111).not.toBe(0);
  });
});

describe('package name', () => {
  const pkg = JSON.parse(read(join(ROOT, 'package.json'))) as { name: string; bin: Record<string, string> };

  it('the npm package has its own name; the command stays fleetctl', () => {
    expect(pkg.name).not.toBe('fleetctl');
    expect(Object.keys(pkg.bin)).toEqual(['fleetctl']);
  });

  it('README, docs, hints, scripts and the demo never tell anyone to fetch fleetctl from the registry', () => {
    const bad = [
      ['npx', 'fleetctl'],
      ['npm i -g', 'fleetctl'],
      ['npm install -g', 'fleetctl'],
      ['npm install --global', 'fleetctl'],
      ['npm exec', 'fleetctl'],
    ].map((p) => p.join(' '));
    const all = ['src', 'scripts', 'docs', 'bin', 'man', 'completions'].flatMap((d) => files(join(ROOT, d)));
    all.push(join(ROOT, 'README.md'));
    const offenders = all.flatMap((p) => bad.filter((b) => read(p).includes(b)).map((b) => `${rel(p)}: ${b}`));
    expect(offenders).toEqual([]);
  });
});
