// A carve's archive as an admin downloads it: the node's blocks streamed in order, a few at a
// time, never the whole archive in memory.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Caller, Deps } from '../../context.js';
import type { EnvironmentRow } from '../../store/schema.js';
import { LogTypes } from '../../../api/index.js';
import { conflict, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { carveFilesWithHost } from './carves.js';
import { findQuery } from './live-queries.js';

/** Blocks read from the database per step of a download: memory stays at this many blocks. */
const DOWNLOAD_BLOCKS_PER_READ = 4;

/** The blocks of a carve session in order, decoded, read a few at a time (constant memory). */
async function* carveBytes(deps: Deps, session: string): AsyncGenerator<Buffer> {
  let next = 0;
  for (;;) {
    const rows = await deps.db
      .selectFrom('carve_blocks')
      .select(['block_id', 'data'])
      .where('session_id', '=', session)
      .where('block_id', '>=', next)
      .orderBy('block_id')
      .limit(DOWNLOAD_BLOCKS_PER_READ)
      .execute();
    if (rows.length === 0) return;
    for (const r of rows) yield Buffer.from(r.data, 'base64');
    next = rows[rows.length - 1].block_id + 1;
  }
}

/**
 * A completed carve file, streamed (docs/api.md: the raw bytes osquery sent, not re-wrapped). The
 * SHA-256 header needs every byte before the first is sent: it is computed by one streaming pass
 * at the first download and kept in the row, so later downloads make one pass.
 */
export async function carveArchive(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  name: string,
  session: string | undefined,
  sourceIp: string,
) {
  const row = await findQuery(deps, env, name);
  if (row.type !== 'carve') throw notFound(`"${name}" in environment ${env.name} is a query, not a carve`);
  if (row.deleted) throw notFound(`carve "${name}" was deleted: its files were removed from the server`);
  const files = await carveFilesWithHost(deps, env, row.id, { completed: true });
  if (files.length === 0) {
    // Issue 27: blocks older than admin/retention_carves_days are purged; the file stays listed.
    const purged = await deps.db
      .selectFrom('carve_files')
      .select('id')
      .where('query_id', '=', row.id)
      .where('status', '=', 'PURGED')
      .executeTakeFirst();
    throw notFound(
      purged ? 'the archive of this carve was purged by retention (setting admin/retention_carves_days)' : 'no carved files yet',
    );
  }
  let file = files[0];
  if (session) {
    const f = files.find((x) => x.session_id === session);
    if (!f) throw notFound('session not found for carve');
    file = f;
  } else if (files.length > 1) {
    throw conflict(
      `carve has ${files.length} files; pass ?session=<id> to select one (sessions: ${files.map((f) => f.session_id).join(', ')})`,
      { sessions: files.map((f) => f.session_id) },
    );
  }
  let sha256 = file.sha256;
  if (!sha256) {
    const h = createHash('sha256');
    for await (const chunk of carveBytes(deps, file.session_id)) h.update(chunk);
    sha256 = h.digest('hex');
    await deps.db.updateTable('carve_files').set({ sha256 }).where('id', '=', file.id).execute();
  }
  const filename = `${file.uuid}_${file.session_id}_${file.path.replace(/[/\\]/g, '-')}.tar${file.compression === 'zstd' ? '.zst' : ''}`;
  // Every download is audited (issue 20): who took which node's file, and how much of it.
  await writeAudit(deps, {
    line: `carve ${name}: file of ${file.hostname || file.uuid} (session ${file.session_id}, ${file.path}) downloaded, ${Number(file.carve_size)} bytes`,
    logType: LogTypes.carve,
    username: caller.user.username,
    sourceIp,
    env,
  });
  return {
    stream: Readable.from(carveBytes(deps, file.session_id)),
    filename,
    size: Number(file.carve_size),
    blocks: file.total_blocks,
    sha256,
  };
}

// ---- the agent door's side ----
