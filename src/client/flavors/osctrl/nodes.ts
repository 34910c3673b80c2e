import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { withStatusProblems } from './logs.js';

export function nodesResource(s: OsctrlSession) {
  const { base } = s;
  return {
    ...base.nodes,
    // `nodes show` asks for the node's last status problems: osctrl has them in its own status lines.
    get: async (env: string, node: string, o: { statusProblems?: boolean } = {}) => {
      const n = await base.nodes.get(env, node);
      return o.statusProblems ? withStatusProblems(s.http, env, n) : n;
    },
    list: async (env: string, query: Parameters<FleetResources['nodes']['list']>[1] = {}) => {
      const { order, ...rest } = query;
      return base.nodes.list(env, { ...rest, ...(order ? { dir: order } : {}) });
    },
  };
}
