import type { Node } from '../../api/index.js';
import type { Column } from '../../output/index.js';

export const NODE_COLUMNS: Column<Node>[] = [
  // Identifiers are never cut (a UUID must paste into `nodes delete`); on a narrow terminal the
  // others go, TAGS first, IP last.
  { key: 'uuid', header: 'UUID', id: true },
  { key: 'hostname', header: 'HOSTNAME', id: true },
  { key: 'platform', header: 'PLATFORM', drop: 4 },
  { key: 'osquery_version', header: 'OSQUERY', drop: 5 },
  { key: 'ip_address', header: 'IP', id: true, drop: 1 },
  { key: 'health.status', header: 'HEALTH', kind: 'status', drop: 2 },
  { key: 'last_seen', header: 'LAST SEEN', kind: 'time', drop: 3 },
  { key: 'tags', header: 'TAGS', drop: 6 },
];
