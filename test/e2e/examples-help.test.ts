// Every example in --help and in the man pages runs (issue 29): each is taken from its one
// source (the command tree's examples, which --help prints and the man pages are generated
// from), run as a user would (sh, fleetctl on PATH) against a reference server with the
// fixtures it needs (test/e2e/examples/fixtures*.ts), and fails on a non-zero exit, an
// `error:` line or a stack trace.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { expectExampleWorked } from './examples/check.js';
import { FIXTURES, NOT_EXAMPLES } from './examples/fixtures.js';
import { namespacesAvailable, outputSoFar, runExample } from './examples/run.js';
import { commandNames, helpExamples, manExamples, readmeExamples } from './examples/sources.js';
import { World, type WorldName } from './examples/world.js';
import { DEV_PASSWORD } from '../helpers/cli.js';

const examples = helpExamples();
const worlds = new Map<WorldName, Promise<World>>();
const world = (name: WorldName) => {
  if (!worlds.has(name)) worlds.set(name, World.start(name, DEV_PASSWORD));
  return worlds.get(name)!;
};

beforeAll(async () => {
  await world('demo');
});
afterAll(async () => {
  for (const w of worlds.values()) await (await w).stop();
});

describe('the examples are one set', () => {
  it('the man pages show exactly the examples of --help', () => {
    expect(manExamples().map((e) => e.text).sort()).toEqual(examples.map((e) => e.text).sort());
  });

  it('every fixture belongs to an example that exists (help, man or README)', () => {
    const all = new Set([...examples, ...readmeExamples(commandNames())].map((e) => e.text));
    expect(Object.keys(FIXTURES).filter((k) => !all.has(k))).toEqual([]);
    expect(Object.keys(NOT_EXAMPLES).filter((k) => !all.has(k))).toEqual([]);
  });
});

describe('every example in --help and the man pages runs', () => {
  it.each(examples.map((e) => [e.text, e] as const))('%s', async (text, e) => {
    const fixture = FIXTURES[text] ?? {};
    // A hang ends at the test's timeout: show what the example had printed by then.
    onTestFailed(() => console.error(`${text}: printed so far:\n${outputSoFar()}`));
    if (fixture.namespaces?.length && !namespacesAvailable()) {
      if (process.env.CI) throw new Error(`${text}: needs mount/network namespaces (unshare), which this machine refuses`);
      console.warn(`skipped (no namespaces here: unshare refused): ${text}`);
      return;
    }
    const { result, sandbox } = await runExample(await world(fixture.world ?? 'demo'), text, fixture);
    let failure: Error | undefined;
    try {
      expectExampleWorked(result, fixture);
      await fixture.check?.(result, sandbox);
    } catch (err) {
      failure = err as Error;
      failure.message += `\n(shown in ${e.where.join(', ')})`;
    } finally {
      sandbox.cleanup();
    }
    if (fixture.pending) {
      if (!failure) throw new Error(`marked pending (${fixture.pending}) but it works now: remove the mark`);
      console.warn(`pending example (${fixture.pending}): ${text}`);
    } else if (failure) throw failure;
  });
});
