// The baseline of `bench:agents --baseline` (issue 31): the least a Node.js server can do for the
// same agents. node:https alone, no framework: each request's body is read, gunzipped when sent
// so and parsed as JSON (as the agent door does), and answered with a constant of osquery's shape
// (enroll: a fresh node key; config: the bench's pack, so the agents send the same result logs;
// everything else: an empty answer). What the agent door costs beyond it is what fleetctl itself
// does: nothing of this file is the server's code.
//
// With a database path (`--baseline-store`), the least a server that keeps its promises does on
// top: the node key of an enroll stored (and every request's key looked up in memory, unknown:
// node_invalid), and each log batch's lines inserted in one SQLite transaction on this thread
// (WAL, synchronous NORMAL: survives a killed process, as the spool) before it is answered. No
// check-ins, no sinks, no indexes beyond the primary key: a floor, not a design.
// Usage: node agent-baseline-server.mjs CERT KEY PACKS_JSON [DB_PATH] (prints the port it listens on)
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';

const [cert, key, packs, dbPath] = process.argv.slice(2);
const config = JSON.stringify({ packs: JSON.parse(packs), node_invalid: false });
const INVALID = '{"node_invalid":true}';
const store = dbPath ? await openStore(dbPath) : undefined;
const answers = {
  config: () => config,
  read: () => '{"queries":{},"node_invalid":false}',
  enroll: (body) => {
    const nodeKey = randomUUID();
    store?.enroll(nodeKey, body);
    return JSON.stringify({ node_key: nodeKey, node_invalid: false });
  },
  log: (body) => {
    store?.log(body);
    return '{"node_invalid":false}';
  },
};
const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let status = 200;
    let body = '{"node_invalid":false}';
    try {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const parsed = JSON.parse(raw.toString('utf8'));
      const endpoint = req.url.split('?')[0].split('/').pop();
      body = endpoint !== 'enroll' && store && !store.known(parsed.node_key) ? INVALID : (answers[endpoint]?.(parsed) ?? body);
    } catch {
      status = 400;
      body = '{"error":"the body is not JSON"}';
    }
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
// Longer than nginx's upstream keep-alive, as the agent door's (else a request races the close).
server.keepAliveTimeout = 75_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));

async function openStore(path) {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table if not exists nodes (id integer primary key, node_key text not null unique, host_identifier text);
           create table if not exists logs (id integer primary key, node_id integer not null, log_type text not null, line text not null)`);
  const keys = new Map();
  const addNode = db.prepare('insert into nodes (node_key, host_identifier) values (?, ?)');
  const addLine = db.prepare('insert into logs (node_id, log_type, line) values (?, ?, ?)');
  const addLines = db.transaction((nodeId, type, data) => {
    for (const entry of data) addLine.run(nodeId, type, JSON.stringify(entry));
  });
  return {
    known: (nodeKey) => keys.has(nodeKey),
    enroll(nodeKey, body) {
      keys.set(nodeKey, Number(addNode.run(nodeKey, String(body.host_identifier ?? '')).lastInsertRowid));
    },
    log(body) {
      const type = body.log_type === 'status' || body.log_type === 'result' ? body.log_type : undefined;
      if (type && Array.isArray(body.data)) addLines(keys.get(body.node_key), type, body.data);
    },
  };
}
