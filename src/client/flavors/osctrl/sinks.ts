import type { OsctrlSession } from './session.js';
import { refuse } from './shapes.js';

export function sinksResource(_s: OsctrlSession) {
  return {
    list: () => refuse('log-sinks'),
    clone: () => refuse('log-sinks'),
    create: () => refuse('log-sinks'),
    delete: () => refuse('log-sinks'),
    edit: () => refuse('log-sinks'),
    test: () => refuse('log-sinks'),
  };
}
