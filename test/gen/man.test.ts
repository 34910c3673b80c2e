// Man pages: every page renders with man(1) without a single groff warning, and says what a
// reader looks for (exit status, environment, every group's verbs, examples).
import { beforeAll, describe, expect, test } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT, requireTool, tree } from './shells.js';
import { allCommands } from '../../src/gen/model.js';

const MAN = join(ROOT, 'man');
const pages = readdirSync(MAN)
  .filter((f) => f.endsWith('.1'))
  .sort();

async function render(page: string): Promise<{ text: string; warnings: string }> {
  const r = await execa('man', ['--warnings', '-l', '-E', 'UTF-8', join(MAN, page)], {
    env: { MANWIDTH: '80', MANPAGER: 'cat', PAGER: 'cat', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
    reject: false,
  });
  if (r.exitCode !== 0) throw new Error(`man ${page} failed (${r.exitCode}): ${r.stderr}`);
  return { text: String(r.stdout), warnings: String(r.stderr) };
}

beforeAll(() => {
  requireTool('man');
  requireTool('groff');
});

describe('man pages', () => {
  test('one page for the program and one per group', async () => {
    const p = await tree();
    const groups = p.root.commands.filter((c) => c.commands.length && !c.implicitHelp).map((c) => `fleetctl-${c.name}.1`);
    expect(pages).toEqual(['fleetctl.1', ...groups].sort());
    expect(groups.length).toBeGreaterThanOrEqual(3);
  });

  test.each(pages)('%s renders without warnings (man --warnings, groff -ww)', async (page) => {
    const { text, warnings } = await render(page);
    expect(warnings).toBe('');
    expect(text.length).toBeGreaterThan(500);
    const groff = await execa('groff', ['-ww', '-z', '-man', '-K', 'utf8', join(MAN, page)], { reject: false });
    expect(groff.stderr).toBe('');
    expect(groff.exitCode).toBe(0);
    // Options stay copyable: ASCII hyphens and quotes, nothing hyphenated at a line end.
    expect(text).not.toMatch(/[\u2010\u2212\u2018\u2019]/);
  });

  test('fleetctl(1) documents synopsis, global options, groups, exit status, environment, files, examples', async () => {
    const { text } = await render('fleetctl.1');
    for (const h of [
      'NAME',
      'SYNOPSIS',
      'DESCRIPTION',
      'GLOBAL OPTIONS',
      'COMMANDS',
      'EXIT STATUS',
      'ENVIRONMENT',
      'FILES',
      'EXAMPLES',
      'SEE ALSO',
    ]) {
      expect(text).toMatch(new RegExp(`^${h}$`, 'm'));
    }
    for (const code of [0, 1, 2, 3, 4, 5, 6, 7, 130]) expect(text).toMatch(new RegExp(`^ {7}${code} +\\S`, 'm'));
    for (const v of [
      'FLEETCTL_URL',
      'FLEETCTL_ENV',
      'FLEETCTL_TOKEN',
      'FLEETCTL_PROFILE',
      'FLEETCTL_CONFIG_DIR',
      'NO_COLOR',
      'FORCE_COLOR',
      'HTTPS_PROXY',
      'NO_PROXY',
      'NODE_EXTRA_CA_CERTS',
      'FLEETCTL_ADMIN_PASSWORD',
      'FLEETCTL_JWT_SECRET',
    ]) {
      expect(text).toMatch(new RegExp(`^ {7}${v}$`, 'm'));
    }
    expect(text).toContain('config.json');
    expect(text).toContain('credentials.json');
    expect(text).toContain('-o, --output format');
    expect(text).toContain('One of: table, wide, json, jsonl, yaml, csv.');
    expect(text).toContain('$ fleetctl nodes list --status active');
    // Every group with every verb, and a pointer to its page.
    const p = await tree();
    for (const g of p.root.commands.filter((c) => c.commands.length && !c.implicitHelp)) {
      expect(text).toContain(`fleetctl-${g.name}(1)`);
      for (const v of g.commands.filter((c) => !c.implicitHelp)) expect(text).toContain(`fleetctl ${g.name} ${v.name}`);
    }
  });

  test('each group page documents every verb with its arguments, options and examples', async () => {
    const p = await tree();
    for (const g of p.root.commands.filter((c) => c.commands.length && !c.implicitHelp)) {
      const { text } = await render(`fleetctl-${g.name}.1`);
      expect(text, g.name).toMatch(/^SEE ALSO\n\s+fleetctl\(1\)/m);
      for (const v of allCommands(g).filter((c) => !c.implicitHelp)) {
        expect(text, v.path.join(' ')).toMatch(new RegExp(`^ {3}fleetctl ${v.path.join(' ')}$`, 'm'));
        for (const o of v.options.filter((x) => x.long !== '--help'))
          expect(text, `${v.path.join(' ')} ${o.flags}`).toContain(o.long ?? o.short);
        for (const e of v.examples) expect(text.replace(/\s+/g, ' '), e).toContain(`$ ${e}`.replace(/\s+/g, ' '));
      }
    }
  });

  test('the nodes page lists the choices of --status', async () => {
    const { text } = await render('fleetctl-nodes.1');
    expect(text).toMatch(/--status status\n\s+node status\. One of: all, active, inactive\./);
  });
});
