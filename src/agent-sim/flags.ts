// The osquery flags an agent is started with (the file `fleetctl enroll show ENV flags`
// prints): where to connect, which endpoints, which intervals. Only the flags the TLS plugins
// read are kept; defaults are osquery's own where a flag is absent.

export interface AgentFlags {
  /** host[:port] of --tls_hostname (port 443 when absent, as osquery). */
  host: string;
  port: number;
  enroll: string;
  config?: string;
  logger?: string;
  distributedRead?: string;
  distributedWrite?: string;
  carverStart?: string;
  carverContinue?: string;
  /** --tls_server_certs: a PEM file path on the agent's machine. */
  serverCerts?: string;
  enrollSecretPath?: string;
  /** Seconds. osquery's defaults: config refresh 0 (never; we use 300 when the config plugin is tls), logger period 4, distributed interval 60. */
  configRefresh: number;
  loggerPeriod: number;
  distributedInterval: number;
  loggerCompress: boolean;
  carverBlockSize: number;
}

export class FlagsError extends Error {}

/** Parses `--name=value` lines (also `--name value`, comments and blank lines ignored). */
export function readFlagLines(text: string): Map<string, string> {
  const flags = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^--?([A-Za-z0-9_]+)(?:[=\s]+(.*))?$/.exec(line);
    if (!m) throw new FlagsError(`not an osquery flag line: ${JSON.stringify(line.slice(0, 80))}`);
    flags.set(m[1], (m[2] ?? 'true').trim());
  }
  return flags;
}

function seconds(flags: Map<string, string>, name: string, def: number): number {
  const v = flags.get(name);
  if (v === undefined) return def;
  if (!/^\d+$/.test(v)) throw new FlagsError(`--${name}=${v}: expected whole seconds`);
  return Number(v);
}

const endpoint = (v: string | undefined) => (v === undefined || v === '' ? undefined : v.startsWith('/') ? v : `/${v}`);

export function parseAgentFlags(text: string): AgentFlags {
  const f = readFlagLines(text);
  const hostname = f.get('tls_hostname');
  if (!hostname) throw new FlagsError('the flags have no --tls_hostname');
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hostname);
  if (!m) throw new FlagsError(`--tls_hostname=${hostname}: expected HOST or HOST:PORT`);
  const enroll = endpoint(f.get('enroll_tls_endpoint'));
  if (!enroll) throw new FlagsError('the flags have no --enroll_tls_endpoint');
  const on = (plugin: string, name: string) => (f.get(plugin) === 'tls' ? endpoint(f.get(name)) : undefined);
  const carving = f.get('disable_carver') === 'false';
  return {
    host: m[1].replace(/^\[|\]$/g, ''),
    port: m[2] ? Number(m[2]) : 443,
    enroll,
    config: on('config_plugin', 'config_tls_endpoint'),
    logger: on('logger_plugin', 'logger_tls_endpoint'),
    distributedRead: f.get('disable_distributed') === 'false' ? on('distributed_plugin', 'distributed_tls_read_endpoint') : undefined,
    distributedWrite: f.get('disable_distributed') === 'false' ? on('distributed_plugin', 'distributed_tls_write_endpoint') : undefined,
    carverStart: carving ? endpoint(f.get('carver_start_endpoint')) : undefined,
    carverContinue: carving ? endpoint(f.get('carver_continue_endpoint')) : undefined,
    serverCerts: f.get('tls_server_certs') || undefined,
    enrollSecretPath: f.get('enroll_secret_path') || undefined,
    configRefresh: seconds(f, 'config_tls_refresh', seconds(f, 'config_refresh', 300)),
    loggerPeriod: seconds(f, 'logger_tls_period', 4),
    distributedInterval: seconds(f, 'distributed_interval', 60),
    loggerCompress: f.get('logger_tls_compress') === 'true',
    carverBlockSize: seconds(f, 'carver_block_size', 8192),
  };
}
