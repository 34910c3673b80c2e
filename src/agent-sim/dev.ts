// `fleetctl server --dev --dev-agents N`: live agents for the demo fleet. They get what a real
// install gets, through the admin API like an operator would (log in, read the environment's
// flags and enroll secret), then enroll over the agent listener's TLS.
import { request } from 'undici';
import { Simulator, parseAgentFlags } from './index.js';

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
  const res = await request(url, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

export async function startDevAgents(o: DevAgentsOptions): Promise<Simulator> {
  const api = o.apiUrl.replace(/\/$/, '');
  const env = encodeURIComponent(o.env);
  const { token } = await getJson(`${api}/api/v1/login/${env}`, { method: 'POST', body: { username: o.username, password: o.password } });
  const flags = parseAgentFlags((await getJson(`${api}/api/v1/environments/${env}/enroll/flags`, { token })).data);
  const secret = String((await getJson(`${api}/api/v1/environments/${env}/enroll/secret`, { token })).data).trim();
  const sim = new Simulator({ flags, secret, seed: `dev-${o.env}`, ca: o.ca, connections: Math.min(16, o.count), spread: o.count > 1, log: o.log });
  sim.add(o.count);
  return sim;
}
