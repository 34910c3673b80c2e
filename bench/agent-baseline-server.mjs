// The baseline of `bench:agents --baseline` (issue 31): the least a Node.js server can do for the
// same agents. node:https alone, no framework, no database: each request's body is read, gunzipped
// when sent so and parsed as JSON (as the agent door does), and answered with a constant of
// osquery's shape (enroll: a fresh node key; config: the bench's pack, so the agents send the
// same result logs; everything else: an empty answer). What the agent door costs beyond it is
// what fleetctl itself does: nothing of this file is the server's code.
// Usage: node agent-baseline-server.mjs CERT KEY PACKS_JSON (prints the port it listens on)
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';

const [cert, key, packs] = process.argv.slice(2);
const config = JSON.stringify({ packs: JSON.parse(packs), node_invalid: false });
const answers = {
  config: () => config,
  read: () => '{"queries":{},"node_invalid":false}',
  enroll: () => JSON.stringify({ node_key: randomUUID(), node_invalid: false }),
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
      JSON.parse(raw.toString('utf8'));
      const endpoint = req.url.split('?')[0].split('/').pop();
      body = answers[endpoint]?.() ?? body;
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
