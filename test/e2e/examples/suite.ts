// The test body both example files share: one `it` per example, run in its world with its
// fixture (fixtures*.ts), failing on a non-zero exit, an error line or a stack trace; a hang shows
// what the example had printed when the test's timeout ends it.
import { afterAll, it, onTestFailed } from 'vitest';
import { expectExampleWorked } from './check.js';
import { FIXTURES } from './fixtures.js';
import { namespacesAvailable, outputSoFar, runExample } from './run.js';
import type { Example } from './sources.js';
import { Sandbox, World, removeShim, type WorldName } from './world.js';

/** The worlds of one test file, started when an example first needs one, stopped after the file. */
export function worldsOf(password: string): (name: WorldName) => Promise<World> {
  const worlds = new Map<WorldName, Promise<World>>();
  afterAll(async () => {
    for (const w of worlds.values()) await (await w).stop();
    for (const sb of [...Sandbox.open]) sb.cleanup();
    removeShim();
  });
  return (name) => {
    if (!worlds.has(name)) worlds.set(name, World.start(name, password));
    return worlds.get(name)!;
  };
}

export function itRunsEach(examples: Example[], world: (name: WorldName) => Promise<World>): void {
  it.each(examples.map((e) => [e.text, e] as const))('%s', async (text, e) => {
    const fixture = FIXTURES[text] ?? {};
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
}
