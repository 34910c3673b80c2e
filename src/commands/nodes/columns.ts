import type { Node } from '../../api/index.js';
import type { Column } from '../../output/index.js';

export const NODE_COLUMNS: Column<Node>[] = [
  { key: 'uuid', header: 'UUID' },
  { key: 'hostname', header: 'HOSTNAME' },
  { key: 'platform', header: 'PLATFORM' },
  { key: 'osquery_version', header: 'OSQUERY' },
  { key: 'ip_address', header: 'IP' },
  { key: 'health.status', header: 'HEALTH', kind: 'status' },
  { key: 'last_seen', header: 'LAST SEEN', kind: 'time' },
  { key: 'tags', header: 'TAGS' },
];
