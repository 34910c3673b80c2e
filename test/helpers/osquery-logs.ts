// Log entries as osquery 5 sends them to the TLS logger (event format, the default; real ones in
// test/fixtures/osquery/logs-5.23.0.json), and a node that enrolls and sends them through the agent
// door with osquery's protocol. For the logs and query report tests (issue 30).
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { agentPost, hostDetails, type Flags } from './osquery-agent.js';

type Columns = Record<string, string>;
const base = { hostIdentifier: 'x', calendarTime: 'Wed Nov 25 10:00:00 2026 UTC', unixTime: 1795000000, epoch: 0, numerics: false };

export const added = (name: string, columns: Columns, counter = 1) => ({ name, ...base, counter, columns, action: 'added' });
export const removed = (name: string, columns: Columns, counter = 1) => ({ name, ...base, counter, columns, action: 'removed' });
export const snapshot = (name: string, rows: Columns[]) => ({ snapshot: rows, action: 'snapshot', name, ...base, counter: 0 });
export const status = (severity: number, message: string) => ({
  ...base,
  severity,
  filename: 'scheduler.cpp',
  line: 84,
  message,
  version: '5.23.0',
});

export interface LoggingNode {
  uuid: string;
  hostname: string;
  key: string;
}

/** Nodes of the environment whose enroll flags, secret and agent certificate are given. */
export function logAgent(flags: Flags, secret: string, ca: string) {
  const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
  return {
    async enroll(hostname = `logs-${randomUUID().slice(0, 8)}`): Promise<LoggingNode> {
      const uuid = randomUUID();
      const r = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, hostname) });
      expect(r.body.node_key).toBeTruthy();
      return { uuid, hostname, key: r.body.node_key as string };
    },
    /** One log request; the agent door answers 200 once the entries are committed. */
    async send(n: LoggingNode, logType: 'result' | 'status', data: unknown[]): Promise<void> {
      const r = await post('log', { node_key: n.key, log_type: logType, data });
      expect(r.status).toBe(200);
    },
  };
}
