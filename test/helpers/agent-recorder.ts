// A recording TLS proxy in front of the agent listener (issue 26): what an agent really sends,
// request by request (endpoint, headers, body decoded), and what the server answered. The
// real-agent wire test runs osqueryd and the simulator through it and compares the shapes of
// their requests with the fixtures recorded from osquery (test/fixtures/osquery/).
import { createServer, request, type Server } from 'node:https';
import { gunzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  /** The endpoint, by the last part of its path: enroll, config, log, read, write, init, block. */
  endpoint: string;
  headers: Record<string, string>;
  /** The body as JSON (gunzipped when sent so); the text when it is not JSON. */
  body: unknown;
  status: number;
  response: unknown;
}

export interface Recorder {
  /** host:port for --tls_hostname. */
  hostname: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

const parse = (b: Buffer): unknown => {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    return b.toString('utf8');
  }
};

/** Listens on 127.0.0.1 (any free port) with `cert`/`key`, forwards every request to `target` (host:port). */
export async function startRecorder(o: { target: string; cert: string; key: string; ca: string }): Promise<Recorder> {
  const [host, port] = [o.target.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(o.target)![1])];
  const exchanges: Exchange[] = [];
  const server: Server = createServer({ cert: o.cert, key: o.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const fwd = request(
        { host, port, path: req.url, method: req.method, headers: req.headers, ca: o.ca, servername: 'localhost' },
        (r) => {
          const out: Buffer[] = [];
          r.on('data', (c: Buffer) => out.push(c));
          r.on('end', () => {
            const answer = Buffer.concat(out);
            const gz = String(req.headers['content-encoding'] ?? '') === 'gzip';
            const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
            exchanges.push({
              endpoint: (req.url ?? '').split('?')[0].split('/').pop() ?? '',
              headers,
              body: parse(gz ? gunzipSync(raw) : raw),
              status: r.statusCode ?? 0,
              response: parse(answer),
            });
            res.writeHead(r.statusCode ?? 502, r.headers);
            res.end(answer);
          });
        },
      );
      fwd.on('error', (e) => {
        res.writeHead(502);
        res.end(String(e));
      });
      fwd.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hostname: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The shape of a JSON value: objects as their keys' shapes (sorted), arrays as the union of their
 * elements' shapes, scalars as their type. Two agents "send the same" when their shapes are equal.
 * Maps keyed by data (query names, node keys) are given as `keyed` paths: their keys become "*".
 */
export function shapeOf(v: unknown, keyed: string[] = [], path = '$'): unknown {
  if (Array.isArray(v)) {
    const seen = new Map<string, unknown>();
    for (const x of v) {
      const s = shapeOf(x, keyed, `${path}[]`);
      seen.set(JSON.stringify(s), s);
    }
    return [...seen.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, s]) => s);
  }
  if (v !== null && typeof v === 'object') {
    if (keyed.includes(path)) {
      const values = Object.values(v as Record<string, unknown>).map((x) => shapeOf(x, keyed, `${path}.*`));
      const uniq = [...new Map(values.map((s) => [JSON.stringify(s), s])).values()];
      return { '*': uniq.length === 1 ? uniq[0] : uniq };
    }
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, shapeOf((v as Record<string, unknown>)[k], keyed, `${path}.${k}`)]),
    );
  }
  return v === null ? 'null' : typeof v;
}
