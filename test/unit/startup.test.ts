// Start-up stays at node's floor only if building the command tree loads nothing heavy: the
// built entry and the chunks it imports statically may import node's own modules, nothing else
// (commander is bundled; the client, config store, schemas and formats load when a verb runs).
// Speed itself is measured by `npm run bench`, not here.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Command } from 'commander';
import { GROUPS, groupOf, loadGroups } from '../../src/commands/index.js';
import { buildProgram, fullProgram } from '../../src/program.js';

const DIST = join(import.meta.dirname, '../../dist');
const ALLOWED = /^node:.*$/;

function staticImports(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?["']([^"']+)["'];?$/gm)) {
    const spec = m[1];
    if (spec.startsWith('.')) out.push(...staticImports(join(dirname(file), spec), seen));
    else out.push(spec);
  }
  return out;
}

describe('start-up', () => {
  it('the entry and its static chunks import only node built-ins', () => {
    const externals = [...new Set(staticImports(join(DIST, 'main.js')))];
    expect(externals.filter((s) => !ALLOWED.test(s))).toEqual([]);
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
