// The wire data of a real osctrl-api 0.5.4 (github.com/jmpsec/osctrl at 3c1c5ab4, osctrl-tls with
// real osquery 5.23.0 agents enrolled), recorded by scripts/osctrl-run.mjs while it drove the built
// fleetctl: test/fixtures/osctrl/recorded.json. Each body is the text that came off the wire (key
// order and bytes kept), secrets replaced by REDACTED-*. The stand-in (osctrl-server.ts) answers
// with these bodies as they are wherever one fits.
import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Exchange {
  method: string;
  route: string;
  path: string;
  query: string;
  request: string | null;
  status: number;
  content_type: string;
  retry_after?: string;
  allow?: string;
  body?: string;
  body_base64?: string;
}

export const RECORDED: Record<string, Exchange> = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/osctrl/recorded.json'), 'utf8'),
).exchanges;

export function exchange(key: string): Exchange {
  const x = RECORDED[key];
  if (!x) throw new Error(`no recorded exchange ${key}`);
  return x;
}
/** The recorded body, as text. */
export const raw = (key: string): string => exchange(key).body ?? Buffer.from(exchange(key).body_base64 ?? '', 'base64').toString('latin1');
/** The recorded body, parsed (a fresh copy). */
export const rec = <T = any>(key: string): T => JSON.parse(raw(key)) as T;

/**
 * Answers with a recorded exchange as it was: status, content type, Retry-After/Allow, and the
 * body bytes. `swap` replaces recorded values in the body text (a query name, a scrubbed token)
 * and nothing else, so key order and formatting stay osctrl's.
 */
export function replay(res: ServerResponse, key: string, swap: Array<[string | RegExp, string]> = []): void {
  const x = exchange(key);
  let body: Buffer;
  if (x.body_base64 !== undefined) body = Buffer.from(x.body_base64, 'base64');
  else {
    let t = x.body ?? '';
    for (const [a, b] of swap) t = typeof a === 'string' ? t.split(a).join(b) : t.replace(a, b);
    body = Buffer.from(t, 'utf8');
  }
  const headers: Record<string, string> = { 'content-length': String(body.length) };
  if (x.content_type) headers['content-type'] = x.content_type;
  if (x.retry_after) headers['retry-after'] = x.retry_after;
  if (x.allow) headers.allow = x.allow;
  res.writeHead(x.status, headers);
  res.end(body);
}

/** A body osctrl builds from its records (a filtered page, a changed record): Go's json.Marshal, no newline. */
export function marshal(res: ServerResponse, status: number, v: unknown): void {
  // Go escapes <, > and & in strings; JSON.stringify keeps the key order of the recorded objects.
  const body = JSON.stringify(v).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** The answers real agents gave to each recorded live query, by SQL, then node UUID: osctrl's result rows. */
export function recordedAnswers(): Map<string, Map<string, { data: string; status: number; name: string }>> {
  const out = new Map<string, Map<string, { data: string; status: number; name: string }>>();
  for (const [key, x] of Object.entries(RECORDED)) {
    const label = /^GET \/api\/v1\/queries\/prod\/results\/\{query\} 200 \((.+)\)$/.exec(key)?.[1];
    if (!label) continue;
    const run = RECORDED[`POST /api/v1/queries/prod 200 (${label})`] ?? RECORDED['POST /api/v1/queries/prod 200'];
    const sql = JSON.parse(run?.request ?? '{}').query as string | undefined;
    if (!sql) continue;
    const byNode = new Map<string, { data: string; status: number; name: string }>();
    for (const r of JSON.parse(x.body ?? '{}').items ?? []) byNode.set(r.uuid, { data: r.data, status: r.status, name: r.name });
    if (byNode.size) out.set(sql, byNode);
  }
  return out;
}
