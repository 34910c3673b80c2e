// The walls of the code (.dependency-cruiser.cjs, run by `npm test` as npm run lint:deps) catch
// what they promise: a circle, the client importing the server, the doors importing each other.
// Each case is a small tree of files in a temporary directory checked with the project's rules.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname, '../..');
const CONFIG = join(root, '.dependency-cruiser.cjs');
const DEPCRUISE = join(root, 'node_modules/.bin/depcruise');

async function cruise(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-walls-'));
  try {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    );
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    return await execa(DEPCRUISE, ['src', '--config', CONFIG, '--output-type', 'err'], { cwd: dir, reject: false });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the walls of the code (npm run lint:deps)', () => {
  it('a circle, even of types only, fails with the path that closes it', async () => {
    const r = await cruise({
      'src/server/context.ts': "import type { Guard } from './services/auth/guard.js';\nexport type Deps = { guard: Guard };\n",
      'src/server/services/auth/guard.ts': "import type { Deps } from '../../context.js';\nexport type Guard = { deps?: Deps };\n",
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toMatch(
      /no-circular: src\/server\/context\.ts →\s+src\/server\/services\/auth\/guard\.ts →\s+src\/server\/context\.ts/,
    );
  });

  it('the client importing the server fails; the server command may start the server', async () => {
    const r = await cruise({
      'src/server/app.ts': 'export const app = 1;\n',
      'src/client/http.ts': "import { app } from '../server/app.js';\nexport const x = app;\n",
      'src/commands/server/index.ts': "import { app } from '../../server/app.js';\nexport const y = app;\n",
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toContain('client-not-server: src/client/http.ts → src/server/app.ts');
    expect(r.stdout).not.toContain('src/commands/server/index.ts →');
  });

  it('the agent door and the admin routes never import each other; routes never import the app', async () => {
    const r = await cruise({
      'src/server/app.ts': 'export const app = 1;\n',
      'src/server/agent/dispatch.ts': "import { tags } from '../routes/tags.js';\nexport const d = tags;\n",
      'src/server/routes/tags.ts': "import { app } from '../app.js';\nexport const tags = app;\n",
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toContain('agent-door-not-admin-door: src/server/agent/dispatch.ts → src/server/routes/tags.ts');
    expect(r.stdout).toContain('routes-not-app: src/server/routes/tags.ts → src/server/app.ts');
  });
});
