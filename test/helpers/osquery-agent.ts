// A minimal osquery TLS protocol client for the agent-door tests: POSTs JSON (optionally
// gzipped, or raw bytes) to the agent listener, trusting its certificate. The agent simulator
// (bench/) speaks the same protocol at scale; this is just enough for e2e checks.
import { get, request } from 'node:https';
import { gzipSync } from 'node:zlib';
import { onTestFailed } from 'vitest';

export interface AgentReply {
  status: number;
  body: any;
}

export interface Flags {
  hostname: string;
  endpoint: Record<string, string>;
}

/** The endpoints and --tls_hostname of an osquery flags file. */
export function parseFlags(text: string): Flags {
  const get = (name: string) => new RegExp(`^--${name}=(.*)$`, 'm').exec(text)?.[1] ?? '';
  return {
    hostname: get('tls_hostname'),
    endpoint: {
      enroll: get('enroll_tls_endpoint'),
      config: get('config_tls_endpoint'),
      log: get('logger_tls_endpoint'),
      read: get('distributed_tls_read_endpoint'),
      write: get('distributed_tls_write_endpoint'),
      carveStart: get('carver_start_endpoint'),
      carveBlock: get('carver_continue_endpoint'),
    },
  };
}

export function agentPost(
  hostname: string,
  path: string,
  body: unknown,
  o: { ca: string; gzip?: boolean; raw?: Buffer; headers?: Record<string, string> },
): Promise<AgentReply> {
  const [host, port] = [hostname.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(hostname)?.[1] ?? 443)];
  let data = o.raw ?? Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(o.headers ?? {}) };
  if (o.gzip && !o.raw) {
    data = gzipSync(data);
    headers['content-encoding'] = 'gzip';
  }
  headers['content-length'] = String(data.length);
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method: 'POST', headers, ca: o.ca, servername: 'localhost' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* keep the text */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** osquery's host_details at enroll, for a Linux host. */
export function hostDetails(uuid: string, hostname: string) {
  return {
    os_version: { name: 'Ubuntu', platform: 'ubuntu', version: '22.04.4 LTS (Jammy Jellyfish)', major: '22', minor: '04' },
    osquery_info: { version: '5.12.1', config_hash: '', build_platform: 'linux', uuid },
    system_info: {
      hostname,
      computer_name: hostname,
      uuid,
      cpu_brand: 'Test CPU',
      physical_memory: '8589934592',
      hardware_serial: 'SER-1234',
    },
    platform_info: { vendor: 'SeaBIOS' },
  };
}

/**
 * Polls until `check` returns a value (not undefined). No clock of its own: what never comes ends
 * in the test's timeout, which then says what was waited for.
 */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  let waiting = true;
  try {
    onTestFailed(() => {
      if (waiting) console.error(`was waiting for ${what}`);
    });
  } catch {
    // in a hook: no test to report to
  }
  try {
    for (;;) {
      const v = await check();
      if (v !== undefined) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    waiting = false;
  }
}

/** GET over the agent listener (the one-liner scripts), trusting its certificate. */
export function agentGet(hostname: string, path: string, ca: string): Promise<{ status: number; text: string }> {
  const [host, port] = [hostname.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(hostname)?.[1] ?? 443)];
  return new Promise((resolve, reject) => {
    get({ host, port, path, ca, servername: 'localhost' }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }).on('error', reject);
  });
}
