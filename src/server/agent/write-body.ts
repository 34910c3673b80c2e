// Distributed writes of any size (issue 26). osquery sends a live query's answer as one plain JSON
// body, with no compression and no size limit of its own, and keeps an answer that was not
// acknowledged to send again with every later answer: refusing a big body (413) left that host's
// live queries wedged until osqueryd restarted. So a write is always read to its end and
// acknowledged:
// - up to WRITE_SMALL bytes: buffered and parsed at once (the usual answer, a few KB);
// - up to WRITE_LIMIT (the bound of an inflated log batch): parsed as it streams in, one row at a
//   time (@streamparser/json), so neither memory nor the event loop holds more than a row and
//   the rows kept;
// - past WRITE_LIMIT: the rows are dropped as they come and the body is read to its end; the
//   answers it carried are recorded as errors for that node ("too large"), so osquery, answered
//   200, drops them and the next query on that host is answered. The names and the node key
//   come from what was parsed before the limit and from the body's tail: osquery serialises
//   queries, then statuses, messages, stats and node_key (distributed.cpp, serializeResults).
import type { Readable } from 'node:stream';
import { JSONParser } from '@streamparser/json';
import { agentError } from './errors.js';
import { AGENT_INFLATED_LIMIT } from './limits.js';

/** Answers up to this many bytes are read whole and parsed at once. */
export const WRITE_SMALL = 1024 * 1024;
/** Answers up to this many bytes are stored; larger ones are read, dropped and recorded as errors. */
export const WRITE_LIMIT = AGENT_INFLATED_LIMIT;
/** How much of an oversized body's end is kept to find its statuses and node key. */
const TAIL_BYTES = 256 * 1024;

/** A distributed write as read off the wire. */
export class WriteBody {
  node_key: unknown;
  queries: Record<string, unknown[]> = {};
  statuses: Record<string, unknown> = {};
  messages: Record<string, unknown> = {};
  /** Bytes on the wire. */
  bytes = 0;
  /** Over WRITE_LIMIT: `queries` is empty and every answer named is an error. */
  tooLarge = false;
  /** Every query the body answers (rows or status). */
  names(): string[] {
    return [...new Set([...Object.keys(this.queries), ...Object.keys(this.statuses)])];
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The whole small body, parsed. */
function fromJson(raw: Buffer): WriteBody {
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    throw agentError(400, 'the body is not valid JSON');
  }
  if (!isObject(v)) throw agentError(400, 'the body must be a JSON object');
  const w = new WriteBody();
  w.bytes = raw.length;
  w.node_key = v.node_key;
  if (isObject(v.queries)) for (const [k, rows] of Object.entries(v.queries)) w.queries[k] = Array.isArray(rows) ? rows : [];
  if (isObject(v.statuses)) w.statuses = v.statuses;
  if (isObject(v.messages)) w.messages = v.messages;
  return w;
}

/** The statuses, messages and node key of an oversized body, from its tail (osquery's order). */
function readTail(w: WriteBody, tail: string): void {
  const at = tail.lastIndexOf('"statuses":');
  if (at >= 0) {
    try {
      const v: unknown = JSON.parse(`{${tail.slice(at)}`);
      if (isObject(v)) {
        if (isObject(v.statuses)) w.statuses = v.statuses;
        if (isObject(v.messages)) w.messages = v.messages;
        if (typeof v.node_key === 'string') w.node_key = v.node_key;
      }
    } catch {
      /* another order: the node key alone below */
    }
  }
  if (typeof w.node_key !== 'string') w.node_key = /"node_key"\s*:\s*"([^"\\]{1,128})"\s*}\s*$/.exec(tail)?.[1];
}

/**
 * Reads a distributed write from `payload` as described above; calls `done` once with the body or
 * a 4xx error (not JSON, or too large with no node key to record it against).
 */
export function readWriteBody(payload: Readable, done: (err: Error | null, body?: WriteBody) => void): void {
  const w = new WriteBody();
  const head: Buffer[] = [];
  let parser: JSONParser | undefined;
  let parseError: Error | undefined;
  let tail = Buffer.alloc(0);
  let finished = false;
  const finish = (err: Error | null, body?: WriteBody) => {
    if (finished) return;
    finished = true;
    done(err, body);
  };

  const startParser = () => {
    const p = new JSONParser({ paths: ['$.node_key', '$.statuses', '$.messages', '$.queries.*', '$.queries.*.*'], keepStack: false });
    p.onValue = ({ value, key, stack }) => {
      if (stack.length === 1) {
        if (key === 'node_key') w.node_key = value;
        else if (key === 'statuses' && isObject(value)) w.statuses = value;
        else if (key === 'messages' && isObject(value)) w.messages = value;
      } else if (stack.length === 2 && stack[1].key === 'queries' && typeof key === 'string') {
        w.queries[key] ??= []; // a query's array ends (its rows were taken one by one)
      } else if (stack.length === 3 && stack[1].key === 'queries' && !w.tooLarge) {
        (w.queries[String(stack[2].key)] ??= []).push(value);
      }
    };
    p.onError = (e) => {
      parseError ??= e;
    };
    return p;
  };

  payload.on('data', (c: Buffer) => {
    w.bytes += c.length;
    if (!parser && w.bytes <= WRITE_SMALL) return void head.push(c);
    if (!parser) {
      parser = startParser();
      for (const h of head.splice(0)) parser.write(h);
    }
    if (w.bytes <= WRITE_LIMIT) {
      if (!parseError) parser.write(c);
      return;
    }
    if (!w.tooLarge) {
      // Past the limit: the rows kept so far go; their names stay known.
      w.tooLarge = true;
      for (const k of Object.keys(w.queries)) w.queries[k] = [];
    }
    tail = Buffer.concat([tail, c]);
    if (tail.length > TAIL_BYTES) tail = tail.subarray(tail.length - TAIL_BYTES);
  });
  payload.on('end', () => {
    if (!parser) {
      try {
        return finish(null, fromJson(Buffer.concat(head)));
      } catch (e) {
        return finish(e as Error);
      }
    }
    if (w.tooLarge) {
      const names = new Set(Object.keys(w.queries));
      readTail(w, tail.toString('utf8'));
      for (const k of Object.keys(w.statuses)) names.add(k);
      w.queries = Object.fromEntries([...names].map((k) => [k, []]));
      if (typeof w.node_key !== 'string')
        return finish(agentError(413, `the answer is larger than ${WRITE_LIMIT} bytes and names no node key at its end`));
      return finish(null, w);
    }
    if (!parseError && !parser.isEnded) parser.end();
    if (parseError) return finish(agentError(400, 'the body is not valid JSON'));
    finish(null, w);
  });
  payload.on('error', (e: NodeJS.ErrnoException) =>
    finish(e.code === 'ECONNRESET' || e.message === 'aborted' ? agentError(400, 'the agent aborted the request') : e),
  );
}
