// Start-up stays at node's floor only if building the command tree runs nothing heavy. The build
// is one file (scripts/build.mjs) whose modules run when first imported: what a start-up ran is
// read from V8's coverage of a real run of the built launcher. Speed itself is measured by
// `npm run bench`, not here.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Command } from 'commander';
import { GROUPS, groupOf, loadGroups } from '../../src/commands/index.js';
import { buildProgram, fullProgram } from '../../src/program.js';

const BIN = join(import.meta.dirname, '../../bin/fleetctl.cjs');
const scratch = mkdtempSync(join(tmpdir(), 'fleetctl-startup-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The source modules a run of the CLI evaluated, and the files of node_modules it loaded. */
function ran(args: string[]): { modules: string[]; packages: string[]; stdout: string } {
  const dir = mkdtempSync(join(scratch, 'run-'));
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      NODE_V8_COVERAGE: join(dir, 'coverage'),
      XDG_CACHE_HOME: join(dir, 'cache'),
      FLEETCTL_CONFIG_DIR: join(dir, 'config'),
    },
  });
  expect(r.status, r.stderr).toBe(0);
  const modules = new Set<string>();
  const packages = new Set<string>();
  for (const f of readdirSync(join(dir, 'coverage'))) {
    const report = JSON.parse(readFileSync(join(dir, 'coverage', f), 'utf8')) as {
      result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
    };
    for (const script of report.result) {
      if (script.url.includes('/node_modules/')) packages.add(script.url.replace(/^.*\/node_modules\//, ''));
      // esbuild names each module's init function after its path ("src/output/table.ts"() {...}).
      for (const fn of script.functions) if (/^src\//.test(fn.functionName) && fn.ranges[0].count > 0) modules.add(fn.functionName);
    }
  }
  return { modules: [...modules].sort(), packages: [...packages].sort(), stdout: r.stdout };
}

describe('start-up', () => {
  it("a group's help runs its commands' modules and no client, config store, schema, server or dependency", () => {
    const r = ran(['nodes', '--help']);
    expect(r.stdout).toContain('Usage: fleetctl nodes');
    expect(r.modules).toContain('src/commands/nodes/index.ts');
    expect(r.packages).toEqual([]);
    expect(
      r.modules.filter((m) =>
        /^src\/(server|agent-sim|gen|auth|config|context)|^src\/client\/(index|http)\.ts|^src\/api\/(?!constants)/.test(m),
      ),
    ).toEqual([]);
  });

  it('the completion generator runs only for the command that prints a script', () => {
    // src/gen/shells.ts (the shells' names, for the command's own definition) may run; a generator not.
    const generators = /^src\/gen\/(bash|zsh|fish|completions|model|man)\.ts$/;
    expect(ran(['--help']).modules.filter((m) => generators.test(m))).toEqual([]);
    const r = ran(['completion', 'bash']);
    expect(r.stdout).toContain('complete -');
    expect(r.modules).toContain('src/gen/bash.ts');
  });

  it('every dependency the bundle requires loads through require()', () => {
    // The launcher compiles the bundle through node:vm, where import() has no loader: the build
    // turns each import() into require() (scripts/build.mjs), so each must be CommonJS or dual.
    const bundle = readFileSync(join(import.meta.dirname, '../../dist/fleetctl.cjs'), 'latin1');
    expect(bundle).not.toMatch(/\bimport\(/);
    const names = [...new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]).filter((n) => !n.startsWith('node:')))];
    expect(names.length).toBeGreaterThan(5);
    const r = spawnSync(process.execPath, ['-e', `for (const n of ${JSON.stringify(names)}) require(n)`], {
      cwd: join(import.meta.dirname, '../..'),
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('one group per command line (commands/index.ts)', () => {
  it("each entry's names are exactly the commands and aliases its module declares, and together the whole tree's", async () => {
    const all: string[] = [];
    for (const g of GROUPS) {
      const p = new Command('fleetctl');
      (await g.load())(p);
      const declared = p.commands.flatMap((c) => [c.name(), ...c.aliases()]);
      expect(declared.sort()).toEqual([...g.names].sort());
      all.push(...declared);
    }
    const full = await fullProgram();
    const top = full.commands.flatMap((c) => [c.name(), ...c.aliases()]).filter((n) => n !== '__complete' && n !== 'options');
    expect(all.sort()).toEqual(top.sort());
  });

  it('finds the group past global options and their values, and loads only it', async () => {
    expect(groupOf(['nodes', 'list'])?.names).toEqual(['nodes']);
    expect(groupOf(['--env', 'nodes', 'tags', 'list'])?.names).toEqual(['tags']);
    expect(groupOf(['-o', 'json', '--insecure', 'logout'])?.names).toEqual(['login', 'logout']);
    expect(groupOf(['--help'])).toBeUndefined();
    expect(groupOf(['help', 'nodes'])).toBeUndefined();
    expect(groupOf(['nodez', 'list'])).toBeUndefined();
    const one = buildProgram(await loadGroups(['--json', 'nodes', 'list']));
    expect(one.commands.map((c) => c.name()).filter((n) => n !== '__complete' && n !== 'options')).toEqual(['nodes']);
    expect((await loadGroups(['nodez'])).length).toBe(GROUPS.length);
    // Completion scripts are generated from the whole tree.
    expect((await loadGroups(['completion', 'bash'])).length).toBe(GROUPS.length);
  });
});
