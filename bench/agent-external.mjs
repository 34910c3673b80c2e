// `npm run bench:agents -- --agent-command 'CMD'` (issue 31): the same figures for an agent
// program nobody here wrote (Fleet's cmd/osquery-perf, or any load agent the user has), measured
// from outside the server:
//   - nginx on loopback in front of the agent door, rewriting the paths the agent speaks
//     (`--agent-paths fleet`: Fleet's /api/osquery/enroll, /config, /log, /distributed/read|write,
//     /carve/begin|block; `ours`: the environment's own paths, passed through), its upstream
//     keep-alive shorter than the server's (else a request races the server closing the socket:
//     a stray 502);
//   - latency and status of every agent request from nginx's access log ($request_time: from the
//     first byte nginx read to the last it wrote, so it includes any pause of the server); for a
//     window's slowest request, also $upstream_response_time (the server's part of it) and when
//     the connection was made and the answer's first byte came, so a slow request can be told
//     from a slow agent or a slow nginx, and a wait before the server's handling from one after;
//   - the command is run as given, its placeholders replaced: {url} (nginx's https URL), {secret}
//     (the enroll secret), {agents} (how many to start), {ramp_seconds} (agents / --ramp), {seed}
//     (differs per start); more agents for the next rung start another copy of the command;
//   - the load generator's CPU (the command's processes and nginx's) is reported beside the
//     server's, so a reader sees when it, not the server, was the limit.
// Nothing of the agent program is in this repository: the user names their own binary.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, fstatSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';

/**
 * The agent command's niceness. On a machine it shares with the server and nginx (2 cores here) the
 * load generator takes what CPU it wants: at 20,000 hosts osquery-perf and nginx used 1.4-1.7
 * cores, the server's event-loop thread waited on the run queue longer than it ran, and once
 * requests slowed osquery-perf's retries took more still, until the run collapsed
 * (docs/performance.md, 2026-11-29).
 * Agents run on other machines in a fleet: here they get the CPU the server and nginx leave.
 * The floor (--baseline) runs the command the same way.
 */
export const AGENT_NICE = 10;

/** Fleet's agent paths (osquery's tls plugins pointed at Fleet) and our endpoint for each. */
export const FLEET_PATHS = {
  enroll: '/api/osquery/enroll',
  config: '/api/osquery/config',
  log: '/api/osquery/log',
  read: '/api/osquery/distributed/read',
  write: '/api/osquery/distributed/write',
  carve_init: '/api/osquery/carve/begin',
  carve_block: '/api/osquery/carve/block',
};

/** osquery-perf checks GET /version (Fleet's) before each log batch: nginx answers it, unlogged. */
const VERSION_CHECK = "    location = /version { access_log off; return 200 '{}'; }";

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * nginx in front of the agent door. `env`: the environment row as the admin API lists it (uuid and
 * the *_path fields); `paths`: 'fleet' or 'ours'. Resolves once nginx answers.
 */
export async function startProxy({ dir, upstream, env, paths, cert, key, keepaliveS, withFileLimit, fileLimit, children }) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const ours = {
    enroll: env.enroll_path,
    config: env.config_path,
    log: env.log_path,
    read: env.query_read_path,
    write: env.query_write_path,
    carve_init: env.carver_init_path,
    carve_block: env.carver_block_path,
  };
  // The access log (every request, the figures' source) in memory when the machine has a tmpfs:
  // nginx's one worker writes it from its event loop, so a write the disk under test holds up
  // stalls the requests in flight and lands in their $request_time as if the server took it.
  const logDir = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/fleetctl-bench-nginx-') : dir;
  if (logDir !== dir) process.once('exit', () => rmSync(logDir, { recursive: true, force: true }));
  const accessLog = join(logDir, 'access.log');
  const clean = (p) => p.replace(/^\/+/, '');
  const locations = Object.entries(ours)
    .map(([ep, path]) => {
      const from = paths === 'fleet' ? FLEET_PATHS[ep] : `/${env.uuid}/${clean(path)}`;
      return `    location = ${from} { proxy_pass https://agentdoor/${env.uuid}/${clean(path)}; }`;
    })
    .join('\n');
  const conf = `
worker_processes 1;
worker_rlimit_nofile ${fileLimit};
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${Math.max(1024, fileLimit - 100)}; }
http {
  log_format bench '$msec $status $request_time $upstream_connect_time|$upstream_header_time|$upstream_response_time $request_uri';
  access_log ${accessLog} bench buffer=256k flush=1s;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 20m;
  client_body_buffer_size 1m;
  keepalive_timeout 75s;
  upstream agentdoor {
    server ${upstream.host}:${upstream.port};
    keepalive 256;
    keepalive_timeout ${keepaliveS}s;
  }
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${cert};
    ssl_certificate_key ${key};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_ssl_session_reuse on;
    proxy_read_timeout 60s;
${locations}
${paths === 'fleet' ? VERSION_CHECK : ''}
    location / { return 404; }
  }
}
`;
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  const [cmd, args] = withFileLimit('nginx', ['-c', file, '-p', dir]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  const url = `https://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      // A TCP connection only: a request would be in the access log the figures are read from.
      await new Promise((resolve, reject) => {
        const s = connect(port, '127.0.0.1', () => (s.destroy(), resolve()));
        s.once('error', reject);
      });
      break;
    } catch {
      if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}; see ${dir}/error.log`);
      if (i > 100) throw new Error(`nginx did not listen on ${port}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, pid: child.pid, accessLog, stop: () => child.kill('SIGTERM') };
}

/** The endpoint of a request line's path (Fleet's or ours), for per-kind figures. */
/**
 * nginx's $upstream_response_time in ms: from its connection to the server to the answer's last
 * byte, summed over its tries; NaN when the server was never asked ("-").
 */
function upstreamMs(field) {
  const parts = field.split(/[,:]\s*/).filter((p) => p.trim() !== '');
  if (parts.length === 0 || parts.some((p) => Number.isNaN(Number(p)))) return NaN;
  return parts.reduce((a, p) => a + Number(p), 0) * 1000;
}

/**
 * The server's part of a request, from nginx's "connect|header|response" upstream times: the
 * connection (a new one: TCP and the TLS handshake), the answer's first byte, its last byte
 * (each from the start of the upstream request). A wait before the server's handling began shows
 * in connectMs or headerMs; one in sending the answer, between headerMs and upstreamMs.
 */
function upstreamTimes(field) {
  const [connect, header, response] = field.split('|');
  if (response === undefined) return { upstreamMs: upstreamMs(field), connectMs: NaN, headerMs: NaN };
  return { upstreamMs: upstreamMs(response), connectMs: upstreamMs(connect), headerMs: upstreamMs(header) };
}

function kindOf(uri, byPath) {
  const path = uri.split('?')[0];
  return byPath.get(path) ?? `other (${path.slice(0, 60)})`;
}

/**
 * The external agents: `add(n)` starts one more copy of the command for n agents; `sample()` reads
 * the access log written since the last sample (latency per kind, errors by status), in the shape
 * of the simulator drivers' samples (bench/agent-driver.mjs).
 */
export function externalAgents({ command, proxy, env, paths, secret, ramp, dir, seed, withFileLimit, children }) {
  const byPath = new Map();
  const ours = {
    enroll: env.enroll_path,
    config: env.config_path,
    log: env.log_path,
    read: env.query_read_path,
    write: env.query_write_path,
    carve_init: env.carver_init_path,
    carve_block: env.carver_block_path,
  };
  for (const [ep, p] of Object.entries(ours)) byPath.set(paths === 'fleet' ? FLEET_PATHS[ep] : `/${env.uuid}/${p.replace(/^\/+/, '')}`, ep);
  const started = [];
  let agents = 0;
  let enrolled = 0;
  let offset = 0;
  let partial = '';
  let lastError;
  const quote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;

  /** New access-log lines since the last read (nginx flushes its buffer every second). */
  const readLines = () => {
    let fd;
    try {
      fd = openSync(proxy.accessLog, 'r');
    } catch {
      return [];
    }
    try {
      const size = fstatSync(fd).size;
      if (size <= offset) return [];
      const buf = Buffer.alloc(size - offset);
      readSync(fd, buf, 0, buf.length, offset);
      offset = size;
      const text = partial + buf.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      return lines;
    } finally {
      closeSync(fd);
    }
  };

  return {
    external: true,
    get agents() {
      return agents;
    },
    add(count) {
      const n = started.length;
      const text = command
        .replaceAll('{url}', proxy.url)
        .replaceAll('{secret}', quote(secret))
        .replaceAll('{agents}', String(count))
        .replaceAll('{ramp_seconds}', String(Math.max(1, Math.round(count / ramp))))
        .replaceAll('{seed}', String(seed + n));
      const out = openSync(join(dir, `agent-command-${n}.log`), 'a');
      const [cmd, args] = withFileLimit('sh', ['-c', `exec nice -n ${AGENT_NICE} ${text}`]);
      const child = spawn(cmd, args, { stdio: ['ignore', out, out], detached: false });
      closeSync(out);
      children.push(child);
      child.on('exit', (code, signal) => {
        if (!child.stopping)
          lastError = `the agent command exited (${signal ?? `exit ${code}`}); see ${join(dir, `agent-command-${n}.log`)}`;
      });
      started.push(child);
      agents += count;
    },
    pids: () => [...started.map((c) => c.pid), proxy.pid],
    /** Requests since the last sample: latency in ms per kind, failures by kind and status. */
    sample() {
      const lat = {};
      const errors = {};
      let slowest;
      for (const line of readLines()) {
        // $upstream_response_time is a list ("0.010, 0.002") when nginx tried more than one connection.
        const fields = line.split(' ');
        const [msec, status, requestTime] = fields;
        const uri = fields.at(-1);
        if (fields.length < 5 || !uri) continue;
        const kind = kindOf(uri, byPath);
        const code = Number(status);
        if (code === 200) {
          const ms = Number(requestTime) * 1000;
          (lat[kind] ??= []).push(ms);
          if (kind === 'enroll') enrolled++;
          // Among the requests the window's max is taken from (enrolls are left out: sample-stats.mjs).
          if (kind !== 'enroll' && (!slowest || ms > slowest.ms)) slowest = { ms, line: fields, kind, at: Number(msec) };
        } else {
          const k = `${kind} ${code}`;
          errors[k] = (errors[k] ?? 0) + 1;
          lastError = `HTTP ${code} on ${kind}`;
        }
      }
      return {
        lat,
        errors,
        lastError,
        slowest: slowest && {
          kind: slowest.kind,
          ms: slowest.ms,
          ...upstreamTimes(slowest.line.slice(3, -1).join(' ')),
          at: new Date(slowest.at * 1000).toISOString(),
        },
        enrolled,
        agents,
        gaveUp: 0,
        connections: 0,
        loopDelayP99: 0,
        lateMax: 0,
        driverCpuMs: 0,
        driverRssMiB: 0,
      };
    },
    /** The last lines each copy of the command printed (its own view: connection errors never reach nginx's log). */
    tails(lines = 6) {
      return started.map((_, n) => {
        try {
          return readFileSync(join(dir, `agent-command-${n}.log`), 'utf8')
            .trimEnd()
            .split('\n')
            .slice(-lines)
            .map((l) => l.slice(0, 400))
            .join('\n');
        } catch {
          return '';
        }
      });
    },
    async stop() {
      for (const c of started) {
        c.stopping = true;
        c.kill('SIGTERM');
      }
      proxy.stop();
    },
  };
}
