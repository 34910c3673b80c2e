// End to end for the sink destinations (issue 28): a real `fleetctl server` (startAgentServer:
// agent listener, its own database), sinks added with the built CLI (`fleetctl sinks add`), and
// agents speaking osquery's TLS protocol that enroll and send result and status logs; what the
// server acknowledged (a 200 to a log request) is returned, so a test can look for exactly those
// lines at the real peer.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { startAgentServer, type AgentServer } from '../osqueryd.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../osquery-agent.js';

export interface LogAgent {
  uuid: string;
  hostname: string;
  /** Sends result lines of query `name` (rows `{run, seq}`); resolves with the lines once acknowledged. */
  results(name: string, run: string, seqs: number[]): Promise<Record<string, unknown>[]>;
  /** Sends status lines (messages `... run RUN #i`); resolves with them once acknowledged. */
  status(run: string, count: number, severity?: number): Promise<Record<string, unknown>[]>;
}

/** A sink as `fleetctl sinks show -o json` prints it (the fields these tests read). */
export interface ShownSink {
  id: number;
  name: string;
  config: Record<string, unknown>;
  state: { delivered: number; backlog_entries: number; rejected: number; last_error: string };
}

export interface LogServer {
  srv: AgentServer;
  /** Adds a global sink with `fleetctl sinks add` (exit 0 expected). */
  addSink(name: string, type: string, source: 'result' | 'status', config: Record<string, unknown>): Promise<void>;
  /** The sink's state as `fleetctl sinks show -o json` prints it. */
  sink(name: string): Promise<ShownSink>;
  agent(): Promise<LogAgent>;
  stop(): Promise<void>;
}

export async function startLogServer(): Promise<LogServer> {
  const srv = await startAgentServer();
  const e = await srv.enrollment();
  const flags: Flags = parseFlags(e.flags);
  const post = async (path: string, body: unknown) => {
    for (let i = 0; ; i++) {
      const r = await agentPost(flags.hostname, path, body, { ca: e.cert, gzip: true });
      // 503: the server asks the agent to send the batch again, as osquery does.
      if (r.status !== 503 || i > 100) return r;
      await new Promise((res) => setTimeout(res, 500));
    }
  };
  return {
    srv,
    async addSink(name, type, source, config) {
      const r = await srv.cli.run([
        'sinks',
        'add',
        'global',
        '--name',
        name,
        '--type',
        type,
        '--source',
        source,
        '--config',
        JSON.stringify(config),
      ]);
      expect(r.stderr + r.stdout, `sinks add ${name}`).not.toMatch(/^error/m);
      expect(r.exitCode).toBe(0);
    },
    async sink(name) {
      const r = await srv.cli.run(['sinks', 'show', name, 'global', '-o', 'json']);
      expect(r.exitCode).toBe(0);
      return JSON.parse(r.stdout) as ShownSink;
    },
    async agent() {
      const uuid = randomUUID();
      const hostname = `host-${uuid.slice(0, 8)}`;
      const enrolled = await post(flags.endpoint.enroll, {
        enroll_secret: e.secret,
        host_identifier: uuid,
        host_details: hostDetails(uuid, hostname),
      });
      expect(enrolled.status).toBe(200);
      const nodeKey = (enrolled.body as { node_key: string }).node_key;
      const send = async (logType: 'result' | 'status', data: Record<string, unknown>[]) => {
        const r = await post(flags.endpoint.log, { node_key: nodeKey, log_type: logType, data });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return data;
      };
      const now = () => Math.floor(Date.now() / 1000);
      const decorations = { host_uuid: uuid, hostname };
      return {
        uuid,
        hostname,
        results: (name, run, seqs) =>
          send(
            'result',
            seqs.map((seq) => ({
              name,
              hostIdentifier: uuid,
              calendarTime: new Date().toUTCString(),
              unixTime: now(),
              epoch: 0,
              counter: seq,
              numerics: false,
              decorations,
              columns: { pid: String(1000 + seq), name: 'osqueryd', run, seq: String(seq) },
              action: 'added',
            })),
          ),
        status: (run, count, severity = 0) =>
          send(
            'status',
            Array.from({ length: count }, (_, i) => ({
              hostIdentifier: uuid,
              calendarTime: new Date().toUTCString(),
              unixTime: String(now()),
              severity: String(severity),
              filename: 'scheduler.cpp',
              line: '83',
              message: `Executing scheduled query: run ${run} #${i}`,
              version: '5.23.0',
              decorations,
            })),
          ),
      };
    },
    stop: () => srv.stop(),
  };
}

/** Two agents each sending 50 results of its own query and 5 status lines; what was acknowledged. */
export async function sendSample(
  ls: LogServer,
  run: string,
): Promise<{ results: Record<string, unknown>[]; status: Record<string, unknown>[]; agents: LogAgent[] }> {
  const [a, b] = [await ls.agent(), await ls.agent()];
  const seqs = Array.from({ length: 50 }, (_, i) => i);
  const results = [
    ...(await a.results('pack_e2e_processes', run, seqs)),
    ...(await b.results(
      'pack_e2e_users',
      run,
      seqs.map((i) => 50 + i),
    )),
  ];
  const status = [...(await a.status(`${run}-status`, 5)), ...(await b.status(`${run}-status`, 5, 1))];
  return { results, status, agents: [a, b] };
}

/** A result line's identity (node, query, row), and a status line's (node, message). */
export function lineKey(value: unknown): string {
  const l = value as { hostIdentifier?: string; name?: string; message?: string; columns?: { seq?: string } };
  return l.columns ? `${l.hostIdentifier}|${l.name}|${l.columns.seq}` : `${l.hostIdentifier}|${l.message}`;
}
