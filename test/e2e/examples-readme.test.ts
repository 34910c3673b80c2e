// Every example in the README runs (issue 29): the commands of its shell and console blocks, the
// run: lines of its workflow, and each `fleetctl ...` it quotes in its text and tables (a quote
// that only names a command is not one), run like the --help examples (examples-help.test.ts)
// against the demo the README starts (its password is the README's: demo-pass-1). Those that are
// also --help examples run there, once. The blocks of "Running it in production" (marked
// <!-- deploy:NAME -->) are steps of one deployment, run in order with the real osquery agent by
// test/e2e/deploy-real-agent.test.ts; an example shown only there runs there.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOT_EXAMPLES } from './examples/fixtures.js';
import { DEPLOY_BLOCK, ROOT, commandNames, helpExamples, readmeExamples } from './examples/sources.js';
import { itRunsEach, worldsOf } from './examples/suite.js';

const help = new Set((await helpExamples()).map((e) => e.text));
const all = readmeExamples(await commandNames());
const inDeploySteps = (where: string[]) => where.every((w) => DEPLOY_BLOCK.test(w));
const examples = all.filter((e) => !help.has(e.text) && !(e.text in NOT_EXAMPLES) && !inDeploySteps(e.where));
const world = worldsOf('demo-pass-1');

describe('every example in the README runs', () => {
  it('each deployment step with a fleetctl command is a block deploy-real-agent.test.ts runs', () => {
    const deployTest = readFileSync(join(ROOT, 'test/e2e/deploy-real-agent.test.ts'), 'utf8');
    const steps = new Set(all.flatMap((e) => e.where.map((w) => DEPLOY_BLOCK.exec(w)?.[1]).filter((s) => s !== undefined)));
    expect([...steps].filter((s) => !deployTest.includes(`blocks.get('${s}')`))).toEqual([]);
    expect(steps.size).toBeGreaterThan(0);
  });

  itRunsEach(examples, world);
});
