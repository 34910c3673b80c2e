// The checked-in completions/ and man/ are what `npm run gen` makes from today's command tree,
// and package.json lists every man page.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT } from './shells.js';

let out: string;
beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'fleetctl-gen-'));
  await execa('node', [join(ROOT, 'scripts/gen.mjs'), '--out', out], { cwd: ROOT });
});
afterAll(() => rmSync(out, { recursive: true, force: true }));

const list = (dir: string): string[] => {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
};

describe('generated files', () => {
  test('completions/ and man/ are up to date (else: run npm run gen)', () => {
    const stale: string[] = [];
    for (const dir of ['completions', 'man']) {
      const want = list(join(out, dir));
      const have = list(join(ROOT, dir));
      expect(want.length).toBeGreaterThan(0);
      for (const f of new Set([...want, ...have])) {
        const a = want.includes(f) ? readFileSync(join(out, dir, f)) : undefined;
        const b = have.includes(f) ? readFileSync(join(ROOT, dir, f)) : undefined;
        if (!a) stale.push(`${dir}/${f} is no longer generated`);
        else if (!b) stale.push(`${dir}/${f} is missing`);
        else if (!a.equals(b)) stale.push(`${dir}/${f} differs`);
      }
    }
    expect(stale, `generated files are stale: run npm run gen\n  ${stale.join('\n  ')}`).toEqual([]);
  });

  test('package.json "man" lists every page (else: run npm run gen)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man: string[]; files: string[] };
    expect([...pkg.man].sort(), 'package.json "man" is stale: run npm run gen').toEqual(list(join(out, 'man')).map((f) => `man/${f}`));
    expect(pkg.man[0]).toBe('man/fleetctl.1');
    expect(pkg.files).toEqual(expect.arrayContaining(['completions/', 'man/']));
  });

  test('the output does not depend on who generates it', async () => {
    const again = mkdtempSync(join(tmpdir(), 'fleetctl-gen-'));
    try {
      await execa('node', [join(ROOT, 'scripts/gen.mjs'), '--out', again], {
        cwd: ROOT,
        env: { HOME: '/home/someone-else', XDG_DATA_HOME: '/srv/data', XDG_CONFIG_HOME: '/srv/config', FLEETCTL_URL: 'https://x.example' },
      });
      for (const dir of ['completions', 'man']) {
        for (const f of list(join(out, dir)))
          expect(readFileSync(join(again, dir, f), 'utf8'), `${dir}/${f}`).toBe(readFileSync(join(out, dir, f), 'utf8'));
      }
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
  });
});
