// Carves with the real osquery agent (issue 26 items 1, 3, 5): osquery 4.7+ starts its carver
// with a random request_id and the carve's carve_guid, which the server matches from the row of
// its answer; files, patterns (LIKE) and zstd archives come back byte for byte; a directory comes
// back empty and says so; a refused carver start is shown by `carves show` and `carves run`;
// a pattern carved by a zstd agent comes back as a .tar.zst with the files it matches.
// The carves run concurrently: osquery starts requested carves on its scheduler's whole minute,
// so they share one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';
import { isZstd, tarFiles } from '../helpers/tar.js';

describeRealAgent('real osquery agent: carves', () => {
  let srv: AgentServer;
  const agents: Osqueryd[] = [];
  let plain: string;
  let zstd: string;
  let bigBlocks: string;
  let files: string;
  let out: string;
  const content = randomBytes(300_000); // several blocks of a small --carver_block_size
  const notes = ['first note\n', 'second note\n'];

  beforeAll(async () => {
    files = mkdtempSync(join(tmpdir(), 'carve-src-'));
    out = mkdtempSync(join(tmpdir(), 'carve-out-'));
    writeFileSync(join(files, 'evidence.bin'), content);
    mkdirSync(join(files, 'notes'));
    notes.forEach((n, i) => writeFileSync(join(files, 'notes', `${i + 1}.log`), n));
    writeFileSync(join(files, 'notes', 'skip.txt'), 'not a .log\n');
    srv = await startAgentServer();
    const enrollment = await srv.enrollment();
    // Blocks of 64 KiB: the 300 KB file is several blocks, as a real large file would be.
    agents.push(startOsqueryd({ enrollment, flags: ['--carver_block_size=65536'] }));
    agents.push(startOsqueryd({ enrollment, flags: ['--carver_compression=true'] }));
    // Over the server's 8 MiB block limit: its carver start is refused.
    agents.push(startOsqueryd({ enrollment, flags: ['--carver_block_size=9000000'] }));
    [plain, zstd, bigBlocks] = await Promise.all(agents.map((a) => a.identifier()));
    await Promise.all(
      [plain, zstd, bigBlocks].map((u) => srv.waitForNode(u, (n) => n.config_hash !== '', `node ${u} to fetch its configuration`)),
    );
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await srv?.stop();
    rmSync(files, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  });

  /** carves run (the default --wait: from the agents' interval), then carves download into a fresh directory; the archives' bytes. */
  async function carveAndDownload(path: string, node: string): Promise<{ name: string; archives: { file: string; bytes: Buffer }[] }> {
    const run = await srv.cli.run(['carves', 'run', path, '--target', node]);
    expect(run.stderr).toContain(`of ${path} started on 1 node`);
    expect(run.exitCode, run.stderr).toBe(0);
    const name = run.stdout.trim();
    const dir = mkdtempSync(join(out, 'dl-'));
    const dl = await srv.cli.run(['carves', 'download', name], { cwd: dir });
    expect(dl.exitCode, dl.stderr).toBe(0);
    return { name, archives: readdirSync(dir).map((file) => ({ file, bytes: readFileSync(join(dir, file)) })) };
  }

  describe.concurrent('downloaded archives equal the files', () => {
    it('a file of several blocks', async () => {
      const { name, archives } = await carveAndDownload(join(files, 'evidence.bin'), plain);
      expect(archives).toHaveLength(1);
      expect(archives[0].file).toMatch(new RegExp(`^${name}_.*\\.tar$`));
      const inside = tarFiles(archives[0].bytes);
      expect(inside.map((f) => f.name)).toEqual([expect.stringMatching(/\/evidence\.bin$/)]);
      expect(inside[0].data.equals(content)).toBe(true);
      const show = await srv.api('GET', `/api/v1/carves/prod/${name}`);
      expect(show.body.files[0]).toMatchObject({ uuid: plain, status: 'COMPLETED', compression: 'none', note: '', block_size: 65536 });
      expect(show.body.files[0].total_blocks).toBeGreaterThan(1);
      // The carve_guid osquery generated, as it sent it in its carver start.
      expect(show.body.files[0].carve_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      // carves run's default wait (its expiry is that plus a minute): at least 5 minutes, longer than
      // osquery may take (its carve minute after the read), which a 1-minute wait would cut short.
      const q = show.body.query as { created_at: string; expiration: string };
      expect(Date.parse(q.expiration) - Date.parse(q.created_at)).toBeGreaterThanOrEqual((300 + 60) * 1000);
    });

    it('a pattern (%) carves the files it matches, as LIKE', async () => {
      const { archives } = await carveAndDownload(join(files, 'notes', '%.log'), plain);
      const inside = tarFiles(archives[0].bytes);
      expect(inside.map((f) => f.name.replace(/^.*\//, '')).sort()).toEqual(['1.log', '2.log']);
      expect(inside.map((f) => f.data.toString()).sort()).toEqual([...notes].sort());
    });

    // One test for both zstd carves: vitest runs at most 5 concurrent tests at once (maxConcurrency),
    // and a sixth would wait for a slot, then for osquery's next carve minute.
    it('zstd archives (--carver_compression) of a file and of a pattern are recognised and saved as .tar.zst', async () => {
      const [file, pattern] = await Promise.all([
        carveAndDownload(join(files, 'evidence.bin'), zstd),
        carveAndDownload(join(files, 'notes', '%.log'), zstd),
      ]);
      for (const { name, archives } of [file, pattern]) {
        expect(archives[0].file).toMatch(new RegExp(`^${name}_.*\\.tar\\.zst$`));
        expect(isZstd(archives[0].bytes)).toBe(true);
      }
      expect(tarFiles(file.archives[0].bytes)[0].data.equals(content)).toBe(true);
      const show = await srv.cli.run(['carves', 'show', file.name]);
      expect(show.stdout).toMatch(/COMPLETED\t1\/1\t\d+\tzstd\t/);
      const inside = tarFiles(pattern.archives[0].bytes);
      expect(inside.map((f) => f.name.replace(/^.*\//, '')).sort()).toEqual(['1.log', '2.log']);
      expect(inside.map((f) => f.data.toString()).sort()).toEqual([...notes].sort());
    });

    it('a directory comes back empty, and carves run says so (exit 9)', async () => {
      const run = await srv.cli.run(['carves', 'run', join(files, 'notes'), '--target', plain]);
      expect(run.exitCode).toBe(9);
      expect(run.stderr).toMatch(/1 of 1 archive came back empty \(.*no file in the archive: nothing at that path is a regular file/);
      expect(run.stderr).toContain('% matches within a directory');
    });

    it('a carver start the server refuses is shown by carves run and carves show', async () => {
      const run = await srv.cli.run(['carves', 'run', join(files, 'evidence.bin'), '--target', bigBlocks]);
      expect(run.exitCode).toBe(9);
      expect(run.stderr).toMatch(
        /1 of 1 file not uploaded \(the server refused the upload of .*: carver start refused: block_size 9000000 is not from 1 to 8388608 bytes/,
      );
      const show = await srv.cli.run(['carves', 'show', run.stdout.trim()]);
      expect(show.stdout).toMatch(/NODE\tREFUSED\tAT\n.*\tcarver start refused: block_size 9000000/);
    });
  });

  it('a path ending in / is refused before anything starts (a directory: osquery carves files)', async () => {
    const r = await srv.cli.run(['carves', 'run', `${join(files, 'notes')}/`, '--target', plain]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('is a directory: osquery carves files, not directories; carve the files in it with a pattern');
    expect((await srv.api('GET', '/api/v1/carves/prod')).body.items.filter((c: { path: string }) => c.path.endsWith('/'))).toEqual([]);
  });
});
