// `carves run PATH --target ...` (start a carve, wait for the files) and `carves download NAME`
// (the reassembled archive, checked against the size and block count the agent announced).
import type { Command } from 'commander';
import { createHash } from 'node:crypto';
import { constants as fsConstants, createWriteStream, lstatSync, openSync, type WriteStream } from 'node:fs';
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
import { addRunOptions, carveWaitSeconds, targetLists, TARGET_HELP, type RunFlags } from '../query/targets.js';
import { LiveRun } from '../query/live-run.js';

const headerInt = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);

const done = (f: CarveFile) => f.status === 'COMPLETED' || (f.total_blocks > 0 && f.completed_blocks >= f.total_blocks);

/** Polls `carves show` until every file is complete (or, with --exit, every online target's), the deadline, or Ctrl-C. */
async function waitForFiles(
  ctx: Context,
  api: FleetApi,
  run: LiveRun,
  name: string,
  o: { deadline: number; exit?: boolean },
): Promise<{ detail: CarveDetail; onlineDone: boolean; online?: number }> {
  const progress = ctx.io.stderr.isTTY === true;
  const started = Date.now();
  try {
    for (;;) {
      const d = await api.carves.get(run.env, name);
      const complete = d.files.filter(done).length;
      const expected = d.query.expected;
      // Online targets that have not started their upload, from the query's read (fleetctl's server).
      const state = o.exit || progress ? await api.queries.get(run.env, name).catch(() => undefined) : undefined;
      const online = state?.online;
      if (progress)
        ctx.io.err(
          `\r\x1b[K${complete}/${expected} files complete${online !== undefined ? `, ${online} online` : ''} (${Math.round((Date.now() - started) / 1000)} s)`,
        );
      // A node whose carver start was refused gives that carve up (osquery does not retry it): done too.
      const refused = refusedWithoutFile(d).length;
      const settled = complete + refused;
      // Every online target has answered, and each of them has started its upload (or was refused):
      // a node answers the carve query before it starts the upload, so answered alone is not enough.
      const onlineStarted = online !== undefined && d.files.length + refused >= online;
      const onlineDone = o.exit === true && state?.online_pending === 0 && onlineStarted && d.files.every(done) && complete < expected;
      if ((expected > 0 && settled >= expected) || onlineDone || Date.now() >= o.deadline || run.interrupted)
        return { detail: d, onlineDone, online };
      await run.sleep(Math.min(1000, Math.max(0, o.deadline - Date.now())));
    }
  } finally {
    if (progress) ctx.io.err('\r\x1b[K');
  }
}

/** Nodes whose last carver start was refused and that have no file of this carve. */
const refusedWithoutFile = (d: CarveDetail) => (d.refusals ?? []).filter((r) => !d.files.some((f) => f.uuid === r.uuid));

/** One line per node (at most 3, then how many more): "host: why". */
function perNode(items: { host: string; why: string }[]): string {
  const shown = items.slice(0, 3).map((i) => `${sanitize(i.host)}: ${sanitize(i.why)}`);
  return shown.join('; ') + (items.length > 3 ? `; and ${items.length - 3} more` : '');
}

export function registerCarveRun(carves: Command): void {
  registerCarvesRun(carves);

  registerCarvesDownload(carves);
}

function registerCarvesRun(carves: Command): void {
  verb<RunFlags>(
    carves,
    {
      name: 'run',
      summary: 'Carve a file from nodes',
      description:
        'Start a carve of PATH on the target nodes (default: every node of the environment) and wait until\n' +
        'their archives are uploaded, --wait passes, or with --exit every online target has uploaded its file.\n' +
        `Targets as for query run (a union): ${TARGET_HELP}.\n\n` +
        'The carve is bounded like a live query: stopped when the command ends or is interrupted, unless\n' +
        '--detach (then it expires after --expire, default 24h). Prints the carve name on stdout (-o json:\n' +
        '{name, env, expected, completed}); download the archives with carves download NAME. Exit 0 when every\n' +
        'target uploaded its file, 9 when some did not (offline, or not within --wait), 130 when interrupted.',
      examples: [
        'fleetctl carves run /etc/hosts --target db-sfo-00003-4206',
        'name=$(fleetctl carves run /etc/passwd --target tag:pci --exit --wait 5m) && fleetctl carves download "$name"',
        'fleetctl carves run /var/log/auth.log --target platform:ubuntu --detach --wait 0',
      ],
    },
    (cmd) => addRunOptions(cmd.argument('<path>', 'file path on the nodes'), 'carve', 'carve from', 'the files'),
    async (ctx, [path], o) => {
      if (!path.trim()) throw new UsageError('the path is empty');
      const lists = targetLists(o.target ?? ['all']);
      const env = ctx.requireEnv();
      const api = await ctx.api();
      if (lists.status_list || lists.health_list || lists.risk_list) api.need('derived-targets');
      // Without --wait: long enough for osquery to read, start and upload the carve (carveWaitSeconds),
      // at the targets' own cadence where the server knows it (issue 26), else the environment's.
      if (o.wait === undefined) {
        const cadence = (await api.carves.targets(env, lists)).query_interval ?? (await api.environments.get(env)).query_interval;
        o.wait = `${carveWaitSeconds(cadence)}s`;
      }
      const run = new LiveRun(ctx, api, env, 'carve', o);
      const { query_name: name } = await api.carves.run(env, { path, ...lists, ...run.expiryBody() });
      run.begin(name);
      let detail: CarveDetail;
      let onlineDone = false;
      try {
        detail = await api.carves.get(env, name);
        ctx.io.err(
          `Carve ${name} of ${sanitize(path)} started on ${detail.query.expected} node${detail.query.expected === 1 ? '' : 's'} in ${env}\n`,
        );
        if (run.waitMs > 0)
          ({ detail, onlineDone } = await waitForFiles(ctx, api, run, name, { deadline: Date.now() + run.waitMs, exit: o.exit }));
      } catch (e) {
        await run.end(name, 'cancel');
        throw e;
      }
      if (run.interrupted) {
        await run.end(name, 'cancel');
        throw new InterruptedError();
      }
      const completed = detail.files.filter(done).length;
      const expected = detail.query.expected;
      const fate =
        run.waitMs > 0
          ? run.fate(await run.end(name, completed < expected ? 'complete' : 'none'), name)
          : (await run.end(name, 'none'), '');
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, expected, completed });
      else ctx.io.out(`${name}\n`);
      if (run.waitMs > 0 && completed < expected) {
        const refused = refusedWithoutFile(detail);
        const why =
          refused.length > 0
            ? `the server refused the upload of ${perNode(refused.map((r) => ({ host: r.hostname || r.uuid, why: r.error })))}`
            : onlineDone
              ? 'every online target uploaded its file; the others are offline'
              : `not within ${o.wait}`;
        throw new CliError(
          `${expected - completed} of ${expected} file${expected === 1 ? '' : 's'} not uploaded (${why})${fate ? `; ${fate}` : ''}`,
          ExitCode.incomplete,
          completed > 0 ? `download what arrived: fleetctl carves download ${name}` : `see fleetctl carves show ${name}`,
        );
      }
      // An archive of nothing (a directory, a pattern matching no file) is not the file asked for.
      const empty = detail.files.filter((f) => done(f) && f.note);
      if (run.waitMs > 0 && empty.length > 0) {
        throw new CliError(
          `${empty.length} of ${completed} archive${completed === 1 ? '' : 's'} came back empty (${perNode(empty.map((f) => ({ host: f.hostname || f.uuid, why: f.note! })))})`,
          ExitCode.incomplete,
          'carve files, or a pattern of files: % matches within a directory, %% recursively (e.g. /var/log/%.log)',
        );
      }
    },
  );
}

function registerCarvesDownload(carves: Command): void {
  verb<{ output?: string; session?: string; node?: string; force?: boolean }>(
    carves,
    {
      name: 'download',
      summary: "Download a carve's archives",
      description:
        'Download the reassembled archives (tars) of a carve and check each: its size must be the carve_size the\n' +
        'node announced, and carve_size/block_size must give its block count; otherwise the partial file is\n' +
        'removed and the command fails. Without -O, each file is written to NAME_HOST_SESSION.tar (.tar.zst when\n' +
        'the node compressed it: --carver_compression), every completed file of the carve or the one --node or\n' +
        '--session picks; -O FILE (or - for stdout, not a terminal) takes one file. Files are created 0600, never\n' +
        'through a symbolic link, and written to ' +
        'FILE.partial until checked. Every download is written to the audit log by the server.',
      examples: [
        'fleetctl carves download carve_etc_hosts',
        'fleetctl carves download carve_etc_hosts --node prod-vpn-0019 -O hosts.tar',
        'fleetctl carves download carve_etc_hosts --session 5a9c25c3c730f85e5989 -O - | tar -tv',
      ],
    },
    (cmd) =>
      cmd
        .argument('<name>', 'carve name')
        .option('-O, --output-file <file>', 'where to write one archive (default: NAME_HOST_SESSION.tar(.zst) each; - for stdout)')
        .option('--node <node>', 'the file of this node (hostname or UUID)')
        .option('--session <id>', 'the file of this carve session (carves show lists them)')
        .option('-f, --force', 'overwrite existing files'),
    async (ctx, [name], o) => {
      const out = (o as { outputFile?: string }).outputFile;
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const d = await api.carves.get(env, name);
      let files = d.files;
      if (o.node) {
        const ref = o.node.toLowerCase();
        files = files.filter((f) => f.uuid.toLowerCase() === ref || (f.hostname ?? '').toLowerCase() === ref);
      }
      if (o.session) files = files.filter((f) => f.session_id === o.session);
      const picked = [o.node && `node ${o.node}`, o.session && `session ${o.session}`].filter(Boolean).join(' and ');
      // osctrl marks a carve deleted and keeps serving its files: there a deleted carve downloads.
      if (d.query.carve_status === 'DELETED' && api.traits.carveDeleteRemovesFiles)
        throw new CliError(`carve ${name} was deleted: its files were removed from the server`, ExitCode.notFound);
      if (files.length === 0) {
        throw new CliError(
          picked ? `carve ${name} has no file of ${picked}` : `carve ${name} has no files yet`,
          ExitCode.notFound,
          `see fleetctl carves show ${name}`,
        );
      }
      if (out && files.length > 1) {
        throw new UsageError(
          `carve ${name} has ${files.length} files${picked ? ` of ${picked}` : ''}: -O takes one; pick it with --node or --session, or leave -O out to download each`,
          `files: ${files.map((f) => `${sanitize(f.hostname || f.uuid)} (session ${f.session_id})`).join(', ')}`,
        );
      }
      if (out === '-' && ctx.io.stdoutIsTTY) throw new UsageError('refusing to write an archive to a terminal: use -O FILE or a pipe');
      const ready = files.filter(done);
      if (files.length === 1 && ready.length === 0) {
        const f = files[0];
        throw new CliError(
          `carve ${name} is not complete: ${f.completed_blocks}/${f.total_blocks} blocks received`,
          ExitCode.conflict,
          `wait, then retry; fleetctl carves show ${name}`,
        );
      }
      const dests = ready.map((f) => (out === '-' ? undefined : (out ?? defaultFileName(name, f))));
      if (!o.force) {
        const there = dests.filter((p): p is string => p !== undefined && exists(p));
        if (there.length > 0)
          throw new CliError(
            `${there.join(', ')} ${there.length === 1 ? 'exists' : 'exist'}: pass --force to overwrite`,
            ExitCode.conflict,
          );
      }
      const results = [];
      for (const [i, file] of ready.entries()) results.push(await downloadFile(ctx, api, env, name, file, dests[i]));
      // -o json: the file downloaded (an object), or a list when there were several.
      if (ctx.wantsData() && out !== '-') await printObject(ctx.io, ctx.output(), results.length === 1 ? results[0] : results);
      const left = files.length - ready.length;
      if (left > 0) {
        throw new CliError(
          `${left} of ${files.length} files of ${name} are not complete yet and were not downloaded`,
          ExitCode.incomplete,
          `see fleetctl carves show ${name}`,
        );
      }
    },
  );
}

/** NAME_HOST_SESSION.tar (.tar.zst for a zstd archive), from characters safe in a file name on every system (the hostname is the node's word). */
export function defaultFileName(name: string, f: CarveFile): string {
  const safe = (v: string) =>
    v
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 100) || 'node';
  return `${safe(name)}_${safe(f.hostname || f.uuid)}_${safe(f.session_id).slice(0, 12)}.tar${f.compression === 'zstd' ? '.zst' : ''}`;
}

const exists = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/**
 * Streams one archive to `dest` (stdout when undefined) and checks it against what the node
 * announced. The file is written to DEST.partial, created here (O_EXCL, so never an existing file
 * or a planted link) with mode 0600 and O_NOFOLLOW, and renamed over DEST only once checked.
 */
async function downloadFile(ctx: Context, api: FleetApi, env: string, name: string, file: CarveFile, dest: string | undefined) {
  const partial = dest ? `${dest}.partial` : undefined;
  let sink: NodeJS.WritableStream = ctx.io.stdout;
  if (partial) {
    await rm(partial, { force: true }); // unlink: a leftover (or a link) goes, never followed
    const fd = openSync(partial, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
    sink = createWriteStream('', { fd });
  }
  const dl = await api.carves.archive(env, name, file.session_id).catch(async (e: unknown) => {
    if (partial) {
      (sink as WriteStream).destroy();
      await rm(partial, { force: true });
    }
    throw e;
  });
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
    await pipeline(dl.body, count, sink, { end: Boolean(partial) });
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
  if (blocks !== announcedBlocks || blocks !== file.total_blocks)
    problems.push(`${blocks} blocks of ${file.block_size} bytes, the node announced ${file.total_blocks}`);
  const wantSha = dl.headers['x-carve-sha256'];
  if (wantSha && wantSha.toLowerCase() !== digest) problems.push(`sha256 ${digest}, the server announced ${wantSha}`);
  if (problems.length > 0) {
    if (partial) await rm(partial, { force: true });
    throw new CliError(
      `the archive of ${name} (${sanitize(file.hostname || file.uuid)}) does not match the carve: ${problems.join('; ')}`,
      ExitCode.error,
    );
  }
  if (dest && partial) await rename(partial, dest);
  const host = file.hostname || file.uuid;
  if (!ctx.wantsData())
    ctx.io.err(
      `Downloaded ${name} of ${sanitize(host)} (${bytes} bytes, ${blocks} block${blocks === 1 ? '' : 's'}, size and block count checked)${dest ? ` to ${dest}` : ''}\n`,
    );
  return {
    name,
    env,
    hostname: file.hostname ?? '',
    uuid: file.uuid,
    session_id: file.session_id,
    file: dest ?? '-',
    bytes,
    blocks,
    sha256: digest,
  };
}
