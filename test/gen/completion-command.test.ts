// `fleetctl completion <shell>` (the built binary) prints exactly the checked-in scripts.
import { afterAll, describe, expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cli } from '../helpers/cli.js';
import { ROOT } from './shells.js';

const cli = new Cli();
afterAll(() => cli.cleanup());

// As scripts/gen.mjs reads the tree: a help text may show a default under the home directory.
const GEN_ENV = { HOME: '~', XDG_DATA_HOME: undefined, XDG_CONFIG_HOME: undefined };

describe('fleetctl completion', () => {
  test.each([
    ['bash', 'completions/fleetctl.bash'],
    ['zsh', 'completions/_fleetctl'],
    ['fish', 'completions/fleetctl.fish'],
  ])('%s prints %s', async (shell, file) => {
    const r = await cli.run(['completion', shell], { env: GEN_ENV });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout, `fleetctl completion ${shell} differs from ${file}: run npm run gen`).toBe(readFileSync(join(ROOT, file), 'utf8'));
  });

  test('the bash script does not depend on the environment at all', async () => {
    const r = await cli.run(['completion', 'bash']);
    expect(r.stdout).toBe(readFileSync(join(ROOT, 'completions/fleetctl.bash'), 'utf8'));
  });

  test('an unknown or missing shell is a usage error (exit 2)', async () => {
    const bad = await cli.run(['completion', 'tcsh']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain("'tcsh' is invalid");
    expect(bad.stderr).toContain('bash, zsh, fish');
    const none = await cli.run(['completion']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain("missing required argument 'shell'");
  });

  test('--help tells how to install it for each shell', async () => {
    const r = await cli.run(['completion', '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('fleetctl completion bash > ~/.local/share/bash-completion/completions/fleetctl');
    expect(r.stdout).toContain('fleetctl completion zsh > ~/.zfunc/_fleetctl');
    expect(r.stdout).toContain('fpath=(~/.zfunc $fpath)');
    expect(r.stdout).toContain('fleetctl completion fish > ~/.config/fish/completions/fleetctl.fish');
  });
});
