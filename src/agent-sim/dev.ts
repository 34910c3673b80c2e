// `fleetctl server --dev --dev-agents N`: live agents for the demo fleet. They get what a real
// install gets, through the admin API like an operator would (log in, read the environment's
// flags and enroll secret), then enroll over the agent listener's TLS.
import { request } from 'undici';
import { NEVER } from '../api/common.js';
import { Simulator, parseAgentFlags, syntheticHost } from './index.js';

export interface DevAgentsOptions {
  apiUrl: string;
  username: string;
  password: string;
  env: string;
  count: number;
  /** PEM of the agent listener's certificate (the dev self-signed one). */
  ca?: string | Buffer;
  log?: (line: string) => void;
}

async function getJson(url: string, init: { method?: 'GET' | 'POST'; token?: string; body?: unknown } = {}): Promise<any> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** The tag the demo's live agents carry, so `--target tag:live-agents` asks exactly them. */
export const LIVE_TAG = 'live-agents';
/**
 * The demo's agents ask for live queries every 2 s and send logs every 10 s, whatever the
 * environment's intervals (60 s, 10 min): a demo query should be answered at once. Real agents
 * follow the flags.
 */
const DEV_INTERVALS = { distributed: 2000, log: 10_000 };

export async function startDevAgents(o: DevAgentsOptions): Promise<{ sim: Simulator; hosts: { uuid: string; hostname: string }[] }> {
  const api = o.apiUrl.replace(/\/$/, '');
  const env = encodeURIComponent(o.env);
  const { token } = await getJson(`${api}/api/v1/login/${env}`, { method: 'POST', body: { username: o.username, password: o.password } });
  const flags = parseAgentFlags((await getJson(`${api}/api/v1/environments/${env}/enroll/flags`, { token })).data);
  const secret = String((await getJson(`${api}/api/v1/environments/${env}/enroll/secret`, { token })).data).trim();
  const seed = `dev-${o.env}`;
  const sim = new Simulator({
    flags,
    secret,
    seed,
    ca: o.ca,
    connections: Math.min(16, o.count),
    spread: o.count > 1,
    log: o.log,
    intervals: DEV_INTERVALS,
  });
  sim.add(o.count);
  // Enrolled, then tagged (through the admin API, as an operator would), before the server says so.
  const deadline = Date.now() + 120_000;
  while (sim.enrolled < o.count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const hosts = Array.from({ length: o.count }, (_, i) => syntheticHost(seed, i)).map((h) => ({ uuid: h.uuid, hostname: h.hostname }));
  const enrolled = sim.agents.filter((a) => a.nodeKey).length;
  if (enrolled > 0) {
    try {
      await getJson(`${api}/api/v1/tags/${env}/add`, {
        method: 'POST',
        token,
        body: { name: LIVE_TAG, description: 'The simulated agents of fleetctl server --dev-agents', color: '#2e7d32' },
      });
    } catch (e) {
      if (!/HTTP 409/.test((e as Error).message)) throw e; // there already (a database seeded before)
    }
    const uuids = sim.agents.filter((a) => a.nodeKey).map((a) => a.host.uuid);
    await getJson(`${api}/api/v1/tags/${env}/tag`, { method: 'POST', token, body: { name: LIVE_TAG, uuids } });
    // Their first config fetch reaches the node rows with the next check-in flush (about a
    // second): until then they list as config_invalid (osquery enrolls with config_valid "0"), and
    // the demo's first `nodes list` would show five new agents as unhealthy.
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const page = await getJson(`${api}/api/v1/nodes/${env}?tag=${LIVE_TAG}&page_size=${Math.max(50, uuids.length)}`, { token });
      const fetched = (page.items ?? []).filter(
        (n: { config_fetched_at?: string }) => n.config_fetched_at && n.config_fetched_at !== NEVER,
      ).length;
      if (fetched >= uuids.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return { sim, hosts };
}
