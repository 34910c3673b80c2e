// Agent request bodies: read as bytes with each endpoint's own limit, gunzipped within bounds,
// parsed as one JSON object. Anything else is the agent's fault (4xx).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gunzip, gunzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { agentError } from './errors.js';
import { AGENT_BODY_LIMIT, CARVE_BLOCK_BODY_LIMIT, SMALL_INFLATED } from './limits.js';
import { readWriteBody } from './write-body.js';

const gunzipAsync = promisify(gunzip);

/** The inflated size a gzip member declares in its trailer (ISIZE, mod 2^32); a liar is caught by the limits below. */
export function declaredSize(raw: Buffer): number {
  return raw.length >= 18 ? raw.readUInt32LE(raw.length - 4) : raw.length;
}

/** The bytes of the body, gunzipped when sent so, at most `limit` of them; a 4xx HttpError otherwise. */
export async function inflate(req: FastifyRequest, limit: number): Promise<Buffer> {
  const raw = req.body as Buffer | undefined;
  if (!Buffer.isBuffer(raw)) throw agentError(400, 'the body must be a JSON object');
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc === 'gzip') {
    try {
      // A small body (osquery's usual batch of a few KB) inflates here at once: handing it to the
      // thread pool costs more than inflating it. Bounded by SMALL_INFLATED, whatever its
      // trailer says; a bigger one goes to the pool, off the event loop.
      if (declaredSize(raw) <= SMALL_INFLATED && limit >= SMALL_INFLATED) {
        try {
          return gunzipSync(raw, { maxOutputLength: SMALL_INFLATED });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') throw e;
        }
      }
      // In libuv's thread pool, not on the event loop: a 16 MB batch does not stall other agents.
      return await gunzipAsync(raw, { maxOutputLength: limit });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        throw agentError(413, `the body inflates to more than ${limit} bytes`);
      throw agentError(400, 'the body is not valid gzip');
    }
  }
  if (enc !== '' && enc !== 'identity') throw agentError(415, `unsupported Content-Encoding "${enc}" (gzip or none)`);
  return raw;
}

/** The JSON object of the (inflated) body; a 400 HttpError for anything else. */
export function parseObject(raw: Buffer): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    throw agentError(400, 'the body is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw agentError(400, 'the body must be a JSON object');
  return v as Record<string, unknown>;
}

export const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/**
 * Every body is taken as bytes (osquery's content type varies; gzip is decoded later), read
 * with the endpoint's own limit: 1 MiB, or a carve block's size; a distributed write without
 * Content-Encoding is read by readWriteBody (write-body.ts) whatever its size.
 */
export function readBodiesAsBytes(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req, payload, done) => {
    // A live query's answer, as osquery sends it (plain JSON, any size): read whole, streamed.
    const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
    if (req.agentEndpoint === 'write' && (enc === '' || enc === 'identity')) return readWriteBody(payload, done);
    const limit = req.agentEndpoint === 'carve_block' ? CARVE_BLOCK_BODY_LIMIT : AGENT_BODY_LIMIT;
    const declared = Number(req.headers['content-length']);
    if (declared > limit) return done(agentError(413, `the body is larger than ${limit} bytes`), undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    let finished = false;
    const finish = (err: Error | null, body?: Buffer) => {
      if (finished) return;
      finished = true;
      done(err, body);
    };
    payload.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        payload.removeAllListeners('data');
        payload.resume();
        return finish(agentError(413, `the body is larger than ${limit} bytes`));
      }
      chunks.push(c);
    });
    payload.on('end', () => finish(null, Buffer.concat(chunks, size)));
    // The agent went away before its body arrived (it timed out, or was stopped): its own doing,
    // answered 400 (to nobody) and not reported as a server fault. Node's "aborted" carries
    // ECONNRESET, which would otherwise read as a database connection lost.
    payload.on('error', (e: NodeJS.ErrnoException) =>
      finish(e.code === 'ECONNRESET' || e.message === 'aborted' ? agentError(400, 'the agent aborted the request') : e),
    );
  });
}
