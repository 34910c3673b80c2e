// Every example in the README runs (issue 29): the commands of its shell and console blocks, the
// run: lines of its workflow, and each `fleetctl ...` it quotes in its text and tables (a quote
// that only names a command is not one), run like the --help examples (examples-help.test.ts)
// against the demo the README starts (its password is the README's: demo-pass-1). Those that are
// also --help examples run there, once.
import { describe } from 'vitest';
import { NOT_EXAMPLES } from './examples/fixtures.js';
import { commandNames, helpExamples, readmeExamples } from './examples/sources.js';
import { itRunsEach, worldsOf } from './examples/suite.js';

const help = new Set((await helpExamples()).map((e) => e.text));
const examples = readmeExamples(await commandNames()).filter((e) => !help.has(e.text) && !(e.text in NOT_EXAMPLES));
const world = worldsOf('demo-pass-1');

describe('every example in the README runs', () => {
  itRunsEach(examples, world);
});
