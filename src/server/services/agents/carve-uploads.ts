// The agent door's side of carves (issues 13, 18, 26): the carver's start and continue requests.
//
// How a real osquery (4.7 and later) carves: the distributed query `SELECT * FROM carves WHERE
// carve=1 AND path ...` makes it schedule a carve under two fresh ids, a carve_guid and a random
// request_id, which its answer to that query carries in its one row (recordCarveIds). It starts
// the carve on its scheduler's next minute, archives the files and sends a carver start with
// carve_id = the carve_guid and request_id = that random id: never the query's name. The start is
// matched by those ids; the name is kept as a last resort for older agents, which sent it as
// request_id. A start refused is recorded on the (carve, node) pair, so `carves show` and `carves
// run` can say why a file never came.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { Decompress } from 'fzstd';
import { inTransaction } from '../../store/db.js';
import type { Deps } from '../../context.js';
import type { NodeRow } from '../../store/schema.js';
import { NEVER } from '../../../api/index.js';

/** Largest carve block accepted (osctrl's flags ask for 5,120,000-byte blocks). */
export const MAX_CARVE_BLOCK = 8 * 1024 * 1024;
/** Carve sessions a node may have in progress at once (any number one after the other). */
export const MAX_OPEN_CARVE_SESSIONS = 16;

/** Why a carve start or block is refused (the agent door answers it 400; osquery gives up that carve). */
export class CarveRefusal extends Error {}

/**
 * A carver start that names ids this node has not reported yet, while its answer to a carve is
 * still owed: the start overtook the distributed write carrying them. Answered 503: osquery
 * retries a failed start (after 1 s, then 4 s).
 */
export class CarveNotYet extends Error {}

const idText = (v: unknown) => (typeof v === 'string' ? v.slice(0, 200) : '');

type CarveNode = Pick<NodeRow, 'id' | 'uuid' | 'environment_id'>;

/**
 * Records the ids of a node's answer to a carve query: the row osquery marks carve=1 (the carve it
 * just scheduled), else the first row with a carve_guid. `trx` is the answer's transaction.
 */
export async function recordCarveIds(trx: Deps['db'], queryId: number, nodeId: number, rows: Record<string, unknown>[]): Promise<void> {
  const row =
    rows.find((r) => String(r.carve) === '1' && typeof r.carve_guid === 'string') ?? rows.find((r) => typeof r.carve_guid === 'string');
  if (!row) return;
  await trx
    .updateTable('node_queries')
    .set({ carve_guid: idText(row.carve_guid).toLowerCase(), carve_request_id: idText(row.request_id).toLowerCase() })
    .where('query_id', '=', queryId)
    .where('node_id', '=', nodeId)
    .execute();
}

interface MatchedCarve {
  id: number;
  name: string;
  path: string;
  expiration: string;
  deleted: number;
  expired: number;
  completed: number;
}

/** The carve a start belongs to, among those this node is a target of: by its ids, else by name. */
async function matchCarve(deps: Deps, node: CarveNode, guid: string, requestId: string): Promise<MatchedCarve | undefined> {
  const base = () =>
    deps.db
      .selectFrom('node_queries')
      .innerJoin('queries', 'queries.id', 'node_queries.query_id')
      .select([
        'queries.id',
        'queries.name',
        'queries.path',
        'queries.expiration',
        'queries.deleted',
        'queries.expired',
        'queries.completed',
      ])
      .where('node_queries.node_id', '=', node.id)
      .where('queries.type', '=', 'carve')
      .where('queries.environment_id', '=', node.environment_id);
  if (guid) {
    const byGuid = await base().where('node_queries.carve_guid', '=', guid.toLowerCase()).executeTakeFirst();
    if (byGuid) return byGuid;
  }
  if (requestId) {
    const byRequest = await base().where('node_queries.carve_request_id', '=', requestId.toLowerCase()).executeTakeFirst();
    if (byRequest) return byRequest;
    // Older osquery (before 4.7) sent the distributed query's name as request_id.
    return base().where('queries.name', '=', requestId).executeTakeFirst();
  }
  return undefined;
}

const running = (q: MatchedCarve, now: string) =>
  !q.deleted && !q.expired && !q.completed && !(q.expiration && q.expiration !== NEVER && q.expiration <= now);

/** Keeps why a start of this node for this carve was refused (shown by carves show / carves run). */
async function recordRefusal(deps: Deps, queryIds: number[], nodeId: number, why: string): Promise<void> {
  if (queryIds.length === 0) return;
  await deps.db
    .updateTable('node_queries')
    .set({ carve_error: why.slice(0, 500), carve_error_at: deps.now().toISOString() })
    .where('query_id', 'in', queryIds)
    .where('node_id', '=', nodeId)
    .execute();
}

/**
 * A start that matches no carve: said on every running carve of this node that has no file from
 * it yet (one of them is what the node was trying to upload); answered 503 instead while one of
 * them still waits for the node's answer (the start overtook it).
 */
async function unmatched(deps: Deps, node: CarveNode, guid: string, requestId: string): Promise<never> {
  const now = deps.now().toISOString();
  const waiting = await deps.db
    .selectFrom('node_queries')
    .innerJoin('queries', 'queries.id', 'node_queries.query_id')
    .select(['queries.id', 'node_queries.status'])
    .where('node_queries.node_id', '=', node.id)
    .where('queries.type', '=', 'carve')
    .where('queries.deleted', '=', 0)
    .where('queries.expired', '=', 0)
    .where('queries.completed', '=', 0)
    .where((eb) => eb.or([eb('queries.expiration', '=', ''), eb('queries.expiration', '=', NEVER), eb('queries.expiration', '>', now)]))
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('carve_files')
            .select('carve_files.id')
            .whereRef('carve_files.query_id', '=', 'queries.id')
            .where('carve_files.uuid', '=', node.uuid),
        ),
      ),
    )
    .limit(50)
    .execute();
  if (waiting.some((w) => w.status === 'pending'))
    throw new CarveNotYet('the carve this start belongs to has not been answered by the node yet; retry');
  const why = `carver start refused: no running carve of this node has carve_guid "${guid.slice(0, 80)}" or request_id "${requestId.slice(0, 80)}"`;
  await recordRefusal(
    deps,
    waiting.map((w) => w.id),
    node.id,
    why,
  );
  throw new CarveRefusal(why);
}

/**
 * carver start: a session for a carve this node was targeted by. Refused unless the carve is still
 * running and the announced sizes are consistent and within the limits (block size, server-wide
 * carve size); every refusal of a known carve is recorded on it.
 */
export async function carveStart(deps: Deps, node: CarveNode, b: Record<string, unknown>): Promise<string> {
  const guid = idText(b.carve_id);
  const requestId = idText(b.request_id);
  const q = await matchCarve(deps, node, guid, requestId);
  if (!q) return unmatched(deps, node, guid, requestId);
  const refuse = async (why: string): Promise<never> => {
    await recordRefusal(deps, [q.id], node.id, `carver start refused: ${why}`);
    throw new CarveRefusal(why);
  };
  const blockCount = Number(b.block_count);
  const blockSize = Number(b.block_size);
  const carveSize = Number(b.carve_size);
  if (![blockCount, blockSize, carveSize].every((n) => Number.isSafeInteger(n) && n >= 0))
    return refuse('block_count, block_size and carve_size must be whole numbers');
  if (blockSize < 1 || blockSize > MAX_CARVE_BLOCK)
    return refuse(`block_size ${blockSize} is not from 1 to ${MAX_CARVE_BLOCK} bytes (the node's --carver_block_size)`);
  if (carveSize > deps.config.carveMaxBytes)
    return refuse(`carve_size ${carveSize} is over this server's limit of ${deps.config.carveMaxBytes} bytes (--carve-max-size)`);
  if (blockCount !== Math.ceil(carveSize / blockSize))
    return refuse(`block_count ${blockCount} does not match carve_size ${carveSize} in blocks of ${blockSize}`);
  const now = deps.now().toISOString();
  if (!running(q, now))
    return refuse(`carve ${q.name} is no longer running (${q.deleted ? 'deleted' : q.completed ? 'completed' : 'expired'})`);
  const open = await deps.db
    .selectFrom('carve_files')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('uuid', '=', node.uuid)
    .where('status', '=', 'IN PROGRESS')
    .executeTakeFirst();
  if (Number(open?.n ?? 0) >= MAX_OPEN_CARVE_SESSIONS)
    return refuse(`this node has ${MAX_OPEN_CARVE_SESSIONS} carve sessions in progress already`);
  const session = randomBytes(16).toString('hex');
  await inTransaction(deps.db, async (trx) => {
    await trx
      .insertInto('carve_files')
      .values({
        uuid: node.uuid,
        query_id: q.id,
        carve_id: guid,
        session_id: session,
        path: q.path,
        status: blockCount === 0 ? 'COMPLETED' : 'IN PROGRESS',
        archived: 0,
        block_size: blockSize,
        carve_size: carveSize,
        total_blocks: blockCount,
        completed_blocks: 0,
        created_at: now,
        completed_at: blockCount === 0 ? now : '',
        ...(blockCount === 0 ? { compression: 'none', note: EMPTY_NOTE } : {}),
      })
      .execute();
    // A start accepted: an earlier refusal is no longer the news.
    await trx
      .updateTable('node_queries')
      .set({ carve_error: '', carve_error_at: '' })
      .where('query_id', '=', q.id)
      .where('node_id', '=', node.id)
      .execute();
  });
  return session;
}

/**
 * carver continue: stores one block, checked against what its session announced (block id in
 * range, exactly block_size bytes, the last block the rest of carve_size). The count is added in
 * the database in the same statement that completes the file, so blocks arriving at once on
 * several connections or replicas are each counted once (a retried block is accepted, not counted).
 */
export async function carveBlock(deps: Deps, b: Record<string, unknown>): Promise<void> {
  const session = typeof b.session_id === 'string' ? b.session_id : '';
  const blockId = Number(b.block_id);
  const data = typeof b.data === 'string' ? b.data : undefined;
  if (
    !session ||
    !Number.isSafeInteger(blockId) ||
    blockId < 0 ||
    data === undefined ||
    !/^[A-Za-z0-9+/]*={0,2}$/.test(data.replace(/[\r\n]/g, ''))
  ) {
    throw new CarveRefusal('session_id, block_id and base64 data are required');
  }
  const clean = data.replace(/[\r\n]/g, '');
  const f = await deps.db
    .selectFrom('carve_files')
    .select(['total_blocks', 'block_size', 'carve_size', 'status'])
    .where('session_id', '=', session)
    .executeTakeFirst();
  if (!f) throw new CarveRefusal('unknown carve session');
  if (blockId >= f.total_blocks) throw new CarveRefusal(`block_id ${blockId} is past the session's ${f.total_blocks} blocks`);
  const size = Buffer.byteLength(clean, 'base64');
  const want = blockId === f.total_blocks - 1 ? Number(f.carve_size) - Number(f.block_size) * (f.total_blocks - 1) : Number(f.block_size);
  if (size !== want) throw new CarveRefusal(`block ${blockId} has ${size} bytes; the session announced ${want}`);
  const ts = deps.now().toISOString();
  const completed = await inTransaction(deps.db, async (trx) => {
    const r = await trx
      .insertInto('carve_blocks')
      .values({ session_id: session, block_id: blockId, data: clean })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) return false; // a retried block
    const u = await trx
      .updateTable('carve_files')
      .set((eb) => ({
        completed_blocks: eb('completed_blocks', '+', 1),
        status: sql<string>`case when completed_blocks + 1 >= total_blocks then 'COMPLETED' else status end`,
        completed_at: sql<string>`case when completed_blocks + 1 >= total_blocks then ${ts} else completed_at end`,
      }))
      .where('session_id', '=', session)
      .returning(['status'])
      .executeTakeFirst();
    return u?.status === 'COMPLETED';
  });
  if (completed) await inspectArchive(deps, session);
}

/** What an archive with no file in it says (carves show, carves run). */
export const EMPTY_NOTE =
  'no file in the archive: nothing at that path is a regular file (a directory, a missing file, or a pattern matching none)';

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

/** The first `n` bytes of a zstd stream (or fewer if it is shorter); undefined when it does not decode. */
function zstdHead(data: Buffer, n: number): Buffer | undefined {
  const parts: Uint8Array[] = [];
  let got = 0;
  try {
    const d = new Decompress((chunk) => {
      if (got < n) parts.push(chunk);
      got += chunk.length;
    });
    // Fed in small pieces so decoding stops soon after the head is out.
    for (let i = 0; i < data.length && got < n; i += 16 * 1024) d.push(data.subarray(i, i + 16 * 1024), i + 16 * 1024 >= data.length);
  } catch {
    if (got === 0) return undefined;
  }
  return Buffer.concat(parts).subarray(0, n);
}

/**
 * Once an archive is complete: whether it is zstd (osquery's --carver_compression) or a plain tar,
 * and whether it holds any file (a tar begins with its first entry's header; an archive of no file
 * is end-of-archive zero blocks only).
 */
async function inspectArchive(deps: Deps, session: string): Promise<void> {
  const first = await deps.db
    .selectFrom('carve_blocks')
    .select('data')
    .where('session_id', '=', session)
    .where('block_id', '=', 0)
    .executeTakeFirst();
  const block = Buffer.from(first?.data ?? '', 'base64');
  const zstd = block.subarray(0, 4).equals(ZSTD_MAGIC);
  const head = zstd ? zstdHead(block, 512) : block.subarray(0, 512);
  const empty = head !== undefined && (head.length === 0 || head.every((x) => x === 0));
  await deps.db
    .updateTable('carve_files')
    .set({ compression: zstd ? 'zstd' : 'none', note: empty ? EMPTY_NOTE : '' })
    .where('session_id', '=', session)
    .execute();
}
