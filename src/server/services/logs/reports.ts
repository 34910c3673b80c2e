// Query reports (issue 30): a scheduled query's current rows per node (report-state.ts), kept in
// query_reports by the spool's append transaction (Spool.onCommit): the result lines of a commit
// group are applied in id order, with one read of the states they touch and one upsert, whatever
// the group's size. So a report holds exactly the committed lines, on every replica (the spool's
// commit-order lock serialises append transactions, so no two replicas update a state at once).
// Reading: GET /api/v1/reports/{env}[/{name}], nodes by hostname, a page at a time.
import { CompiledQuery, sql } from 'kysely';
import type { Deps } from '../../context.js';
import type { Dialect } from '../../store/dialect.js';
import { marks, rowsStatement } from '../../store/bound-rows.js';
import type { EnvironmentRow, QueryReportsTable } from '../../store/schema.js';
import { REPORT_PAGE_DEFAULT, REPORT_PAGE_MAX } from '../../../api/constants.js';
import type { ReportSummary } from '../../../api/index.js';
import { badRequest, notFound } from '../../errors.js';
import { applyEntry, boundedRows, stateFromStored, type ReportState } from './report-state.js';
import { resolveNode } from './nodes.js';
import type { CommitHook } from '../delivery/spool.js';

/** What the hook needs of a committed spool row (services/delivery/spool.ts SpooledRow). */
export interface CommittedLine {
  environmentId: number;
  nodeId: number;
  logType: string;
  name?: string | null;
  line: string;
  receivedAt: string;
}

interface Touched {
  e: number;
  n: string;
  d: number;
  state?: ReportState;
  reportedAt: string;
  entries: unknown[];
}

const keyOf = (e: number, n: string, d: number) => `${e}\u0000${d}\u0000${n}`;

/** Whether a state must start from what is stored: its first entry does not replace the rows whole. */
function needsStored(entries: unknown[]): boolean {
  const first = entries[0] as { snapshot?: unknown; action?: unknown } | undefined;
  return !(first && (Array.isArray(first.snapshot) || first.action === 'snapshot'));
}

const READ_SQL = {
  sqlite:
    'select environment_id, name, node_id, kind, epoch, counter, rows, truncated from query_reports ' +
    "where (environment_id, name, node_id) in (select value ->> '$.e', value ->> '$.n', value ->> '$.d' from json_each(?))",
  postgres:
    'select environment_id, name, node_id, kind, epoch, counter, rows, truncated from query_reports ' +
    'where (environment_id, name, node_id) in (select e, n, d from jsonb_to_recordset($1::jsonb) as r(e int, n text, d int))',
};

const SET =
  'kind = excluded.kind, epoch = excluded.epoch, counter = excluded.counter, rows = excluded.rows, row_count = excluded.row_count, truncated = excluded.truncated, reported_at = excluded.reported_at';
// A node deleted while its lines waited for the commit has no report (and no foreign-key error
// that would fail the spool's transaction for every agent of the group).
const UPSERT_SQL = {
  sqlite:
    'insert into query_reports (environment_id, name, node_id, kind, epoch, counter, rows, row_count, truncated, reported_at) ' +
    "select value ->> '$.e', value ->> '$.n', value ->> '$.d', value ->> '$.k', value ->> '$.ep', value ->> '$.c', value ->> '$.r', value ->> '$.rc', value ->> '$.t', value ->> '$.at' " +
    "from json_each(?) where exists (select 1 from nodes where nodes.id = value ->> '$.d') " +
    `on conflict (environment_id, name, node_id) do update set ${SET}`,
  postgres:
    'insert into query_reports (environment_id, name, node_id, kind, epoch, counter, rows, row_count, truncated, reported_at) ' +
    'select e, n, d, k, ep, c, r, rc, t, at from jsonb_to_recordset($1::jsonb) as x(e int, n text, d int, k text, ep bigint, c bigint, r text, rc int, t int, at text) ' +
    'where exists (select 1 from nodes where nodes.id = x.d) ' +
    `on conflict (environment_id, name, node_id) do update set ${SET}`,
};

/** A report as the upsert writes it. */
interface ReportRecord {
  e: number;
  n: string;
  d: number;
  k: string;
  ep: number;
  c: number;
  r: string;
  rc: number;
  t: number;
  at: string;
}
const RECORD_KEYS = ['e', 'n', 'd', 'k', 'ep', 'c', 'r', 'rc', 't', 'at'] as const;
const RECORD_PG_TYPES = ['int', 'text', 'int', 'text', 'bigint', 'bigint', 'text', 'int', 'int', 'text'];

/** The upsert of `n` reports with their values bound (bound-rows.ts): the same as UPSERT_SQL's. */
function boundUpsertSql(dialect: Dialect, n: number): string {
  const mark = marks(dialect);
  const tuple = () => `(${RECORD_PG_TYPES.map((type) => mark(type)).join(', ')})`;
  const tuples = Array.from({ length: n }, tuple).join(', ');
  const rows =
    dialect === 'postgres'
      ? `select ${RECORD_KEYS.join(', ')} from (values ${tuples}) as x(${RECORD_KEYS.join(', ')}) where exists (select 1 from nodes where nodes.id = x.d)`
      : `select ${RECORD_KEYS.map((_, k) => `column${k + 1}`).join(', ')} from (values ${tuples}) where exists (select 1 from nodes where nodes.id = column3)`;
  return (
    'insert into query_reports (environment_id, name, node_id, kind, epoch, counter, rows, row_count, truncated, reported_at) ' +
    `${rows} on conflict (environment_id, name, node_id) do update set ${SET}`
  );
}

/** The upsert of a group's reports: bound values for a few, one JSON parameter for more. */
const upsert = rowsStatement<ReportRecord>(boundUpsertSql, UPSERT_SQL, RECORD_KEYS);

/** What READ_SQL returns of a stored report. */
type StateRow = Pick<QueryReportsTable, 'environment_id' | 'name' | 'node_id' | 'kind' | 'epoch' | 'counter' | 'rows' | 'truncated'>;

/** The group's result lines by report (environment, query, node), in id order; undefined after a fault (reported). */
function touchedBy(deps: Pick<Deps, 'faults'>, rows: readonly CommittedLine[]): Map<string, Touched> | undefined {
  try {
    const touched = new Map<string, Touched>();
    for (const r of rows) {
      if (r.logType !== 'result' || !r.name) continue;
      let entry: unknown;
      try {
        entry = JSON.parse(r.line);
      } catch {
        continue;
      }
      const k = keyOf(r.environmentId, r.name, r.nodeId);
      const t = touched.get(k) ?? { e: r.environmentId, n: r.name, d: r.nodeId, reportedAt: r.receivedAt, entries: [] };
      t.entries.push(entry);
      t.reportedAt = r.receivedAt;
      touched.set(k, t);
    }
    return touched;
  } catch (e) {
    deps.faults.report('query reports', e);
    return undefined;
  }
}

/**
 * The Spool.onCommit hook: applies the group's result lines to the reports, inside the append
 * transaction: the states they touch are read with the stream heads (under the commit-order
 * lock) and written with the rows. A line that is not JSON or holds no rows changes nothing. A
 * fault in here is reported and the group's reports are left as they were (the next snapshot or
 * first run sets them right); it never fails the agents' append.
 */
export function reportsHook(deps: Pick<Deps, 'dialect' | 'faults'>): CommitHook {
  const dialect: Dialect = deps.dialect;
  return (rows) => {
    const touched = touchedBy(deps, rows);
    if (!touched || touched.size === 0) return { reads: [], writes: () => [] };
    const load = [...touched.values()].filter((t) => needsStored(t.entries));
    return {
      reads: load.length > 0 ? [CompiledQuery.raw(READ_SQL[dialect], [JSON.stringify(load.map((t) => ({ e: t.e, n: t.n, d: t.d })))])] : [],
      writes(answers) {
        try {
          for (const s of (answers[0]?.rows ?? []) as StateRow[]) {
            const t = touched.get(keyOf(Number(s.environment_id), s.name, Number(s.node_id)));
            if (t) t.state = stateFromStored(s.kind, Number(s.epoch), Number(s.counter), s.rows, Boolean(Number(s.truncated)));
          }
          const records: ReportRecord[] = [];
          for (const t of touched.values()) {
            let state = t.state;
            for (const e of t.entries) state = applyEntry(state, e);
            if (!state) continue;
            const b = boundedRows(state);
            records.push({
              e: t.e,
              n: t.n,
              d: t.d,
              k: state.kind,
              ep: state.epoch,
              c: state.counter,
              r: b.json,
              rc: b.count,
              t: b.truncated ? 1 : 0,
              at: t.reportedAt,
            });
          }
          return records.length > 0 ? [upsert(dialect, records)] : [];
        } catch (e) {
          deps.faults.report('query reports', e);
          return [];
        }
      },
    };
  };
}

interface ReportCursor {
  h: string;
  i: number;
}

function decodeCursor(s: string | undefined): ReportCursor | undefined {
  if (s === undefined || s === '') return undefined;
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ReportCursor;
    if (typeof c.h === 'string' && Number.isInteger(c.i)) return c;
  } catch {
    /* below */
  }
  throw badRequest('cursor is not one this endpoint gave');
}
const encodeCursor = (c: ReportCursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

function pageSize(v: string | undefined): number {
  if (v === undefined) return REPORT_PAGE_DEFAULT;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw badRequest('limit must be a positive integer');
  return Math.min(Number(v), REPORT_PAGE_MAX);
}

/** Whether the environment's configuration names the query (its schedule, or a pack's as osquery names it). */
async function scheduled(deps: Deps, env: EnvironmentRow, name: string): Promise<boolean> {
  const row = await deps.db.selectFrom('environments').select(['schedule', 'packs']).where('id', '=', env.id).executeTakeFirst();
  const parse = (t: string | undefined): Record<string, unknown> => {
    try {
      const v = JSON.parse(t || '{}') as unknown;
      return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  if (Object.hasOwn(parse(row?.schedule), name)) return true;
  for (const [pack, p] of Object.entries(parse(row?.packs))) {
    const queries = (p as { queries?: Record<string, unknown> })?.queries ?? {};
    for (const q of Object.keys(queries)) if (`pack_${pack}_${q}` === name) return true;
  }
  return false;
}

/**
 * GET /api/v1/reports/{env}/{name}: a page of nodes (by hostname) with their rows, as JSON text
 * (the stored rows are JSON already: they are never parsed and serialised again).
 */
export async function reportPage(
  deps: Deps,
  env: EnvironmentRow,
  name: string,
  q: { node?: string; limit?: string; cursor?: string },
): Promise<string> {
  const limit = pageSize(q.limit);
  const cursor = decodeCursor(q.cursor);
  const nodeId = q.node !== undefined ? (await resolveNode(deps, env, q.node)).id : undefined;
  let totals = deps.db
    .selectFrom('query_reports as r')
    .innerJoin('nodes as n', 'n.id', 'r.node_id')
    .select((eb) => [
      eb.fn.countAll<number>().as('nodes'),
      eb.fn.coalesce(eb.fn.sum<number>('r.row_count'), sql<number>`0`).as('rows'),
      eb.fn.coalesce(eb.fn.max(eb.fn('length', ['n.hostname'])), sql<number>`0`).as('width'),
    ])
    .where('r.environment_id', '=', env.id)
    .where('r.name', '=', name);
  if (nodeId !== undefined) totals = totals.where('r.node_id', '=', nodeId);
  const t = await totals.executeTakeFirstOrThrow();
  if (Number(t.nodes) === 0 && !(await scheduled(deps, env, name))) {
    throw notFound(`no scheduled query "${name}" in environment ${env.name}, and no node has reported one by that name`);
  }
  // The page's nodes first (sorting hostnames and ids only), then their rows by key: the rows'
  // text never goes through a sort of every reporting node.
  let page = deps.db
    .selectFrom('query_reports as r')
    .innerJoin('nodes as n', 'n.id', 'r.node_id')
    .select(['n.id', 'n.uuid', 'n.hostname'])
    .where('r.environment_id', '=', env.id)
    .where('r.name', '=', name)
    .orderBy('n.hostname')
    .orderBy('n.id')
    .limit(limit + 1);
  if (nodeId !== undefined) page = page.where('r.node_id', '=', nodeId);
  if (cursor) page = page.where(sql<boolean>`(n.hostname, n.id) > (${cursor.h}, ${cursor.i})`);
  const nodes = await page.execute();
  const more = nodes.length > limit;
  const shown = more ? nodes.slice(0, limit) : nodes;
  const last = shown[shown.length - 1];
  const reports =
    shown.length === 0
      ? []
      : await deps.db
          .selectFrom('query_reports')
          .select(['node_id', 'kind', 'epoch', 'counter', 'rows', 'truncated', 'reported_at'])
          .where('environment_id', '=', env.id)
          .where('name', '=', name)
          .where(
            'node_id',
            'in',
            shown.map((n) => n.id),
          )
          .execute();
  const byNode = new Map(reports.map((r) => [Number(r.node_id), r]));
  const items: string[] = [];
  for (const n of shown) {
    const r = byNode.get(n.id);
    if (!r) continue; // removed between the two reads
    items.push(
      `{"node_uuid":${JSON.stringify(n.uuid)},"hostname":${JSON.stringify(n.hostname)},"reported_at":${JSON.stringify(r.reported_at)},` +
        `"kind":${JSON.stringify(r.kind)},"epoch":${Number(r.epoch)},"counter":${Number(r.counter)},"rows":${r.rows},"truncated":${Boolean(Number(r.truncated))}}`,
    );
  }
  const next = more && last ? JSON.stringify(encodeCursor({ h: last.hostname, i: last.id })) : 'null';
  return `{"name":${JSON.stringify(name)},"items":[${items.join(',')}],"next_cursor":${next},"total_nodes":${Number(t.nodes)},"total_rows":${Number(t.rows)},"hostname_width":${Number(t.width)}}`;
}

/** GET /api/v1/reports/{env}: every query with a report in the environment, by name. */
export async function reportList(deps: Deps, env: EnvironmentRow): Promise<ReportSummary[]> {
  const rows = await deps.db
    .selectFrom('query_reports')
    .select((eb) => [
      'name',
      eb.fn.countAll<number>().as('nodes'),
      eb.fn.sum<number>('row_count').as('rows'),
      eb.fn.max('reported_at').as('last'),
    ])
    .where('environment_id', '=', env.id)
    .groupBy('name')
    .orderBy('name')
    .execute();
  return rows.map((r) => ({ name: r.name, nodes: Number(r.nodes), rows: Number(r.rows ?? 0), last_reported_at: String(r.last) }));
}
