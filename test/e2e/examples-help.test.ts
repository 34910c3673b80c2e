// Every example in --help and in the man pages runs (issue 29): each is taken from its one
// source (the command tree's examples, which --help prints and the man pages are generated
// from), run as a user would (sh, fleetctl on PATH) against a reference server with the
// fixtures it needs (test/e2e/examples/fixtures*.ts), and fails on a non-zero exit, an
// `error:` line or a stack trace.
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, NOT_EXAMPLES } from './examples/fixtures.js';
import { commandNames, helpExamples, manExamples, readmeExamples } from './examples/sources.js';
import { itRunsEach, worldsOf } from './examples/suite.js';
import { DEV_PASSWORD } from '../helpers/cli.js';

const examples = await helpExamples();
const world = worldsOf(DEV_PASSWORD);

beforeAll(async () => {
  await world('demo');
});

describe('the examples are one set', () => {
  it('the man pages show exactly the examples of --help', () => {
    expect(
      manExamples()
        .map((e) => e.text)
        .sort(),
    ).toEqual(examples.map((e) => e.text).sort());
  });

  it('every fixture belongs to an example that exists (help, man or README)', async () => {
    const all = new Set([...examples, ...readmeExamples(await commandNames())].map((e) => e.text));
    expect(Object.keys(FIXTURES).filter((k) => !all.has(k))).toEqual([]);
    expect(Object.keys(NOT_EXAMPLES).filter((k) => !all.has(k))).toEqual([]);
  });
});

describe('every example in --help and the man pages runs', () => {
  itRunsEach(examples, world);
});
