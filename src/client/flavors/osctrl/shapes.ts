// osctrl 0.5.4's raw answer shapes, its page sizes, and the conversions of its records into this
// API's shapes; `refuse` is the one refusal of what osctrl lacks (docs/osctrl.md lists them).
import type { Static } from '@sinclair/typebox';
import { Type } from '../../../api/type.js';
import { AuditLogEntry, CarveFile, CarveQuery, DistributedQuery, Paginated, Tag, type QueryResult } from '../../../api/index.js';
import { checkAnswer, needs } from '../../validate.js';
import { FEATURE_NAMES, NotSupportedError, type Feature } from '../index.js';

export const seg = encodeURIComponent;

// osctrl leaves fields out (its Go structs are `omitempty`, and it has none of this API's derived
// fields): checkAnswer, as for every answer, fills them with zero values and checks the types of
// what came.

// Raw osctrl shapes (PascalCase where the Go structs have no json tags); needs() names what is used.
export const RawMapEntry = needs(Type.Object({ Name: Type.String(), UUID: Type.String(), ID: Type.Integer() }), 'Name', 'UUID');
export const RawMap = Type.Record(Type.String(), RawMapEntry);
export const RawLoginEnv = needs(Type.Object({ uuid: Type.String(), name: Type.String() }), 'uuid', 'name');
export const RawAccess = Type.Object({ user: Type.Boolean(), query: Type.Boolean(), carve: Type.Boolean(), admin: Type.Boolean() });
export type Access = { user: boolean; query: boolean; carve: boolean; admin: boolean };
export const RawPermissions = Type.Record(Type.String(), RawAccess);
export const RawUser = needs(
  Type.Object({
    username: Type.String(),
    email: Type.String(),
    fullname: Type.String(),
    admin: Type.Boolean(),
    service: Type.Boolean(),
    created_at: Type.String(),
    last_access: Type.String(),
  }),
  'username',
);
export const RawMe = Type.Object({ ...RawUser.properties, permissions: Type.Optional(RawPermissions) });
export const RawSetting = needs(
  Type.Object({
    ID: Type.Integer(),
    Name: Type.String(),
    Service: Type.String(),
    Type: Type.String(),
    EnvironmentID: Type.Integer(),
    String: Type.String(),
    Boolean: Type.Boolean(),
    Integer: Type.Integer(),
    Info: Type.String(),
    CreatedAt: Type.String(),
    UpdatedAt: Type.String(),
  }),
  'Name',
  'Type',
);
export const RawQuery = needs(Type.Object({ ...DistributedQuery.properties }), 'name');
/** One node's answer as osctrl stores it: the rows as a JSON text (`data`), `status` 0 or osquery's error code. */
export const RawResult = needs(
  Type.Object({ id: Type.Integer(), created_at: Type.String(), uuid: Type.String(), data: Type.String(), status: Type.Integer() }),
  'id',
  'uuid',
);
export const RawResultsPage = needs(
  Type.Object({ items: Type.Array(RawResult), page: Type.Integer(), total_pages: Type.Integer(), total_items: Type.Integer() }),
  'items',
);
export const NAME_ANSWER = needs(Type.Object({ query_name: Type.String() }), 'query_name');

/** When fleetctl is not told (--expire-hours), queries and carves expire after this many hours, as with osctrl-cli. */
export const OSCTRL_DEFAULT_EXPIRE_HOURS = 6;
/** osctrl's own page sizes: results up to 1000, lists up to 500. */
export const RESULTS_PAGE = 1000;
export const LIST_PAGE = 500;

/** The feature names refusals use (docs/osctrl.md lists them). */
export const refuse = (feature: string, hint?: string): never => {
  throw new NotSupportedError(feature in FEATURE_NAMES ? FEATURE_NAMES[feature as Feature] : feature, hint);
};

/** tags list: osctrl's tags carry no node count, so the field stays absent (blank in tables), never a wrong 0. */
// A tag without its count (TagWithCount less node_count): osctrl's tag objects have none.
export const TAGS = Type.Array(needs(Type.Object({ ...Tag.properties }), 'name'));
export const CARVE_PAGE = needs(Paginated(CarveQuery), 'items');
export const CARVE_FILE = needs(CarveFile, 'session_id', 'carve_size', 'total_blocks');
export const AUDIT_PAGE = needs(Paginated(AuditLogEntry), 'items');

/** A query as this API shows it: osctrl's record, with `status` derived as this API's server does. */
export function toQuery(r: Record<string, unknown>) {
  const status = r.deleted ? 'DELETED' : r.expired ? 'EXPIRED' : r.completed ? 'COMPLETED' : r.active ? 'ACTIVE' : 'INACTIVE';
  return checkAnswer<Static<typeof DistributedQuery>>(DistributedQuery, { targets: [], ...r, status });
}

/**
 * One node's answer. osctrl keeps what osctrl-tls received as JSON text: `{name, result: [rows],
 * status, message}` (the rows of that node, osquery's status code and error message).
 */
export function toResult(r: { id: number; created_at: string; uuid: string; data: string; status: number }): QueryResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(r.data || '{}');
  } catch {
    parsed = undefined;
  }
  const d = parsed && typeof parsed === 'object' ? (parsed as { result?: unknown; message?: unknown; status?: unknown }) : {};
  const list = Array.isArray(parsed) ? parsed : Array.isArray(d.result) ? d.result : [];
  const rows = list.filter((x): x is Record<string, unknown> => Boolean(x) && typeof x === 'object' && !Array.isArray(x));
  const status = typeof d.status === 'number' ? d.status : r.status;
  const message = typeof d.message === 'string' && d.message ? d.message : `osquery status ${status}`;
  return { id: r.id, created_at: r.created_at, uuid: r.uuid, hostname: '', status, ...(status !== 0 ? { error: message } : {}), rows };
}

export function settingFromOsctrl(r: Record<string, unknown>) {
  const deleted = r.DeletedAt;
  return {
    id: r.ID,
    name: r.Name,
    service: r.Service,
    type: r.Type,
    info: r.Info ?? '',
    environmentID: r.EnvironmentID,
    boolean: r.Boolean,
    integer: r.Integer,
    string: r.String,
    createdAt: r.CreatedAt ?? '',
    updatedAt: r.UpdatedAt ?? '',
    deletedAt: { time: typeof deleted === 'string' ? deleted : null, valid: typeof deleted === 'string' },
  };
}
