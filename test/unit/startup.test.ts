// Start-up stays at node's floor only if building the command tree loads nothing heavy: the
// built entry and the chunks it imports statically may import commander and node's own
// modules, nothing else (the client, config store, schemas and formats load when a verb runs).
// Speed itself is measured by `npm run bench`, not here.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIST = join(import.meta.dirname, '../../dist');
const ALLOWED = /^(commander|node:.*)$/;

function staticImports(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?["']([^"']+)["'];?$/gm)) {
    const spec = m[1]!;
    if (spec.startsWith('.')) out.push(...staticImports(join(dirname(file), spec), seen));
    else out.push(spec);
  }
  return out;
}

describe('start-up', () => {
  it('the entry and its static chunks import only commander and node built-ins', () => {
    const externals = [...new Set(staticImports(join(DIST, 'main.js')))];
    expect(externals.filter((s) => !ALLOWED.test(s))).toEqual([]);
    expect(externals).toContain('commander');
  });
});
