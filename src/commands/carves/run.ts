// `carves run PATH --target ...` (start a carve, wait for the files) and `carves download NAME`
// (the reassembled archive, checked against the size and block count the agent announced).
import type { Command } from 'commander';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { verb } from '../define.js';
import { CliError, ExitCode, InterruptedError, UsageError } from '../../errors.js';
import { printObject } from '../../output/index.js';
import { sanitize } from '../../output/cell.js';
import type { CarveDetail, CarveFile } from '../../api/index.js';
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import { addRunOptions, targetLists } from '../query/targets.js';
import { parseWait } from '../query/index.js';

const headerInt = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);

const done = (f: CarveFile) => f.status === 'COMPLETED' || (f.total_blocks > 0 && f.completed_blocks >= f.total_blocks);

/** Polls `carves show` until `expected` files are complete or the deadline; progress at a terminal. */
async function waitForFiles(ctx: Context, api: FleetApi, env: string, name: string, deadline: number): Promise<CarveDetail> {
  const progress = ctx.io.stderr.isTTY === true;
  const started = Date.now();
  let interrupted = false;
  const onSigint = () => (interrupted = true);
  process.on('SIGINT', onSigint);
  try {
    for (;;) {
      const d = await api.carves.get(env, name);
      const complete = d.files.filter(done).length;
      const expected = d.query.expected;
      if (progress) ctx.io.err(`\r\x1b[K${complete}/${expected} files complete (${Math.round((Date.now() - started) / 1000)} s)`);
      if ((expected > 0 && complete >= expected) || Date.now() >= deadline || interrupted) {
        if (interrupted) throw new InterruptedError();
        return d;
      }
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))));
    }
  } finally {
    process.off('SIGINT', onSigint);
    if (progress) ctx.io.err('\r\x1b[K');
  }
}

export function registerCarveRun(carves: Command): void {
  verb<{ target?: string[]; wait: string; expireHours?: number }>(
    carves,
    {
      name: 'run',
      summary: 'Carve a file from nodes',
      description:
        'Start a carve of PATH on the target nodes (default: every node of the environment) and wait until\n' +
        'their archives are uploaded or --wait passes. Targets as for query run: all, env:NAME, platform:NAME,\n' +
        'tag:NAME, a node UUID or hostname. Prints the carve name on stdout (-o json: {name, env, expected,\n' +
        'completed}); download the archive with carves download NAME.',
      examples: [
        'fleetctl carves run /etc/hosts --target web-fra-00001-3f2a',
        'name=$(fleetctl carves run /etc/passwd --target tag:pci --wait 5m) && fleetctl carves show "$name"',
        'fleetctl carves run /var/log/auth.log --target platform:ubuntu --wait 0',
      ],
    },
    (cmd) => addRunOptions(cmd.argument('<path>', 'file path on the nodes'), 'carve', 'carve from', 'the files'),
    async (ctx, [path], o) => {
      const wait = parseWait(o.wait);
      if (!path!.trim()) throw new UsageError('the path is empty');
      const lists = targetLists(o.target ?? ['all']);
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const { query_name: name } = await api.carves.run(env, { path, ...lists, exp_hours: o.expireHours });
      let detail = await api.carves.get(env, name);
      ctx.io.err(`Carve ${name} of ${sanitize(path!)} started on ${detail.query.expected} node${detail.query.expected === 1 ? '' : 's'} in ${env}\n`);
      if (wait > 0) detail = await waitForFiles(ctx, api, env, name, Date.now() + wait);
      const completed = detail.files.filter(done).length;
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, expected: detail.query.expected, completed });
      else ctx.io.out(`${name}\n`);
      if (wait > 0 && completed < detail.query.expected) {
        ctx.io.err(`${detail.query.expected - completed} of ${detail.query.expected} files not uploaded within ${o.wait}; see fleetctl carves show ${name}\n`);
      }
    },
  );

  verb<{ output?: string; session?: string; force?: boolean }>(
    carves,
    {
      name: 'download',
      summary: "Download a carve's archive",
      description:
        'Download the reassembled archive (a tar) of a completed carve and check it: its size must be the\n' +
        'carve_size the node announced, and carve_size/block_size must give its block count; otherwise the\n' +
        'partial file is removed and the command fails. A carve of several nodes needs --session (carves show\n' +
        'lists them). -O - writes to stdout (not a terminal).',
      examples: ['fleetctl carves download carve_1a2b3c -O hosts.tar', 'fleetctl carves download carve_1a2b3c --session 7d1f... -O - | tar -tv'],
    },
    (cmd) =>
      cmd
        .argument('<name>', 'carve name')
        .option('-O, --output-file <file>', 'where to write the archive (default: NAME.tar; - for stdout)')
        .option('--session <id>', 'which node file (session id), when the carve has several')
        .option('-f, --force', 'overwrite an existing file'),
    async (ctx, [name], o) => {
      const out = (o as { outputFile?: string }).outputFile;
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const d = await api.carves.get(env, name!);
      const files = o.session ? d.files.filter((f) => f.session_id === o.session) : d.files;
      if (files.length === 0) throw new CliError(o.session ? `carve ${name} has no session ${o.session}` : `carve ${name} has no files yet`, ExitCode.notFound, `see fleetctl carves show ${name}`);
      if (files.length > 1) {
        throw new UsageError(`carve ${name} has ${files.length} files; pick one with --session`, `sessions: ${files.map((f) => f.session_id).join(', ')}`);
      }
      const file = files[0]!;
      if (!done(file)) throw new CliError(`carve ${name} is not complete: ${file.completed_blocks}/${file.total_blocks} blocks received`, ExitCode.conflict, `wait, then retry; fleetctl carves show ${name}`);
      if (out === '-' && ctx.io.stdoutIsTTY) throw new UsageError('refusing to write an archive to a terminal: use -O FILE or a pipe');
      const dest = out && out !== '-' ? out : out === '-' ? undefined : `${name}.tar`;
      if (dest && !o.force && existsSync(dest)) throw new CliError(`${dest} exists: pass --force to overwrite it`, ExitCode.conflict);
      const partial = dest ? `${dest}.partial` : undefined;
      // The partial file is ours alone (issue 18): a stale one (or a symlink planted there) is
      // removed, not followed, and the new one is created exclusively and 0600 (a carve may hold
      // secrets); a link planted in between makes the open fail instead of writing through it.
      if (partial) await rm(partial, { force: true });
      const dl = await api.carves.archive(env, name!, o.session);
      let bytes = 0;
      const sha = createHash('sha256');
      const count = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          sha.update(chunk);
          cb(null, chunk);
        },
      });
      try {
        await pipeline(dl.body, count, partial ? createWriteStream(partial, { flags: 'wx', mode: 0o600 }) : ctx.io.stdout, { end: Boolean(partial) });
      } catch (e) {
        if (partial) await rm(partial, { force: true });
        throw e;
      }
      // What the node announced: the carve file record, and the archive's own headers (X-Carve-*) when the server sends them.
      const announcedSize = headerInt(dl.headers['x-carve-size']) ?? file.carve_size;
      const announcedBlocks = headerInt(dl.headers['x-carve-blocks']) ?? file.total_blocks;
      const blocks = file.block_size > 0 ? Math.ceil(bytes / file.block_size) : announcedBlocks;
      const digest = sha.digest('hex');
      const problems: string[] = [];
      if (bytes !== announcedSize || bytes !== file.carve_size) problems.push(`${bytes} bytes received, the node announced ${file.carve_size}`);
      if (blocks !== announcedBlocks || blocks !== file.total_blocks) problems.push(`${blocks} blocks of ${file.block_size} bytes, the node announced ${file.total_blocks}`);
      const wantSha = dl.headers['x-carve-sha256'];
      if (wantSha && wantSha.toLowerCase() !== digest) problems.push(`sha256 ${digest}, the server announced ${wantSha}`);
      if (problems.length > 0) {
        if (partial) await rm(partial, { force: true });
        throw new CliError(`the archive of ${name} does not match the carve: ${problems.join('; ')}`, ExitCode.error);
      }
      if (dest && partial) await rename(partial, dest);
      if (ctx.wantsData() && dest) await printObject(ctx.io, ctx.output(), { name, env, session_id: file.session_id, file: dest, bytes, blocks, sha256: digest });
      else ctx.io.err(`Downloaded ${name} (${bytes} bytes, ${blocks} block${blocks === 1 ? '' : 's'}, size and block count checked)${dest ? ` to ${dest}` : ''}\n`);
    },
  );
}
