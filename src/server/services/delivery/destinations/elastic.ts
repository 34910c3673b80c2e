// elastic: Elasticsearch and OpenSearch through `_bulk` (plain NDJSON over HTTP: the same request
// works on both, where @elastic/elasticsearch 8 is refused by OpenSearch with a 406). Each log
// goes to the daily index <index>-<log type>-YYYY.MM.DD (UTC day of the log's own time) as the
// log object plus `@timestamp` (ISO 8601, from the log's time). The action is `create` with an
// `_id` derived from the spool entry (spool id and receive time), so a batch resent after a fault
// finds its documents already there (409, counted as delivered) instead of duplicating them.
// `_bulk` answers 200 even when items failed: every item is checked. Items answered 400 (a
// mapping conflict, a document it cannot parse) or 413 are rejected, counted and audited; every
// other failure (429, 5xx, 404 when the index cannot be created now, 403 for a write block) is
// retried alone until it goes through. Basic auth or an API key; a CA.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { SinkError } from '../sink.js';
import { urlProblem } from './http.js';
import { snippet } from './http-target.js';
import { HttpTarget } from './http-target.js';

const schema = Type.Object(
  {
    url: Type.String(),
    index: Type.Optional(Type.String()),
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String()),
    api_key: Type.Optional(Type.String()),
    ca: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
type ElasticConfig = { url: string; index?: string; username?: string; password?: string; api_key?: string; ca?: string };

/** The daily index of an entry. */
export function indexOf(prefix: string, e: Pick<SinkEntry, 'logType' | 'time'>): string {
  const d = new Date(e.time * 1000).toISOString();
  return `${prefix}-${e.logType}-${d.slice(0, 4)}.${d.slice(5, 7)}.${d.slice(8, 10)}`;
}

/** A document id that is the same each time the same spool entry is sent. */
export function documentId(e: Pick<SinkEntry, 'id' | 'receivedAt'>): string {
  return `${e.id.toString(36)}-${Date.parse(e.receivedAt).toString(36)}`;
}

/** The document: the log object with @timestamp (a line that is not an object goes under `message`). */
function documentOf(e: SinkEntry): string {
  const ts = JSON.stringify(new Date(e.time * 1000).toISOString());
  const t = e.line.trimStart();
  if (t.startsWith('{')) {
    const rest = t.slice(1).trimStart();
    return rest.startsWith('}') ? `{"@timestamp":${ts}}` : `{"@timestamp":${ts},${rest}`;
  }
  return `{"@timestamp":${ts},"message":${JSON.stringify(e.line)}}`;
}

interface BulkItem {
  status: number;
  error?: { type?: string; reason?: string };
}

class ElasticSink implements Sink {
  private readonly http: HttpTarget;
  private readonly headers: Record<string, string>;
  private readonly prefix: string;

  constructor(private readonly config: ElasticConfig) {
    this.http = new HttpTarget(config.ca, 60_000);
    this.prefix = config.index ?? 'osquery';
    this.headers = { 'content-type': 'application/x-ndjson' };
    if (config.api_key) this.headers.authorization = `ApiKey ${config.api_key}`;
    else if (config.username)
      this.headers.authorization = `Basic ${Buffer.from(`${config.username}:${config.password ?? ''}`).toString('base64')}`;
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    const body = Buffer.from(
      batch
        .map((e) => `{"create":{"_index":${JSON.stringify(indexOf(this.prefix, e))},"_id":"${documentId(e)}"}}\n${documentOf(e)}\n`)
        .join(''),
      'utf8',
    );
    const url = `${this.config.url.replace(/\/+$/, '')}/_bulk`;
    // Only each item's status and error back (filter_path, in Elasticsearch and OpenSearch alike):
    // the full answer is ~200 bytes an item that the server would serialize and we would parse.
    const r = await this.http.call('POST', `${url}?filter_path=errors,items.*.status,items.*.error`, this.headers, body, signal);
    if (r.status !== 200)
      throw new SinkError(`${url} answered ${r.answer}`, r.status === 429 || r.status === 503 ? r.retryAfterMs : undefined);
    let reply: { errors?: boolean; items?: Record<string, BulkItem>[] };
    try {
      reply = JSON.parse(r.text) as typeof reply;
    } catch {
      throw new SinkError(`${url} answered 200 with a body that is not JSON: ${snippet(r.text)}`);
    }
    const items = reply.items ?? [];
    if (items.length !== batch.length) throw new SinkError(`${url} answered ${items.length} items for ${batch.length} documents`);
    const retry: NonNullable<SendResult['retry']> = [];
    const rejected: NonNullable<SendResult['rejected']> = [];
    let created = 0;
    let already = 0;
    items.forEach((item, index) => {
      const it = Object.values(item)[0] ?? { status: 0 };
      if (it.status >= 200 && it.status < 300) created++;
      else if (it.status === 409)
        already++; // this entry's document is there: a resend
      else {
        const error = `${it.status} ${it.error?.type ?? ''}: ${it.error?.reason ?? ''}`.trim();
        if (it.status === 400 || it.status === 413) rejected.push({ index, error });
        else retry.push({ index, error });
      }
    });
    const answer = `HTTP 200: ${created} created${already ? `, ${already} already there` : ''}${retry.length ? `, ${retry.length} to retry (${retry[0].error})` : ''}${rejected.length ? `, ${rejected.length} rejected (${rejected[0].error})` : ''}`;
    return { bytes: body.length, answer, ...(retry.length ? { retry } : {}), ...(rejected.length ? { rejected } : {}) };
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

/** Index names: lower case, no \ / * ? " < > | space , #, not starting with - _ +. */
const INDEX = /^[a-z0-9][a-z0-9._-]{0,199}$/;

export const elastic: Destination<ElasticConfig> = {
  type: 'elastic',
  schema,
  secrets: ['password', 'api_key'],
  check(config): ConfigProblem | undefined {
    const p = urlProblem(config.url, ['http', 'https']);
    if (p) return p;
    if (config.index !== undefined && !INDEX.test(config.index))
      return { field: 'index', message: `"${config.index}" is not an index prefix (lower case letters, digits, . _ -)` };
    const c = config as Record<string, unknown>;
    const has = (k: string) => c[k] !== undefined || c[`${k}_env`] !== undefined || c[`${k}_file`] !== undefined;
    if (has('api_key') && (config.username !== undefined || has('password')))
      return { field: 'api_key', message: 'give either api_key or username and password' };
    if (has('password') && config.username === undefined) return { field: 'username', message: 'a password needs a username' };
    if (config.ca !== undefined && !config.url.startsWith('https:'))
      return { field: 'ca', message: 'a CA is only used with an https:// url' };
    return undefined;
  },
  batch: { maxEntries: 5000, maxBytes: 8 * 1024 * 1024 },
  open: (config) => Promise.resolve(new ElasticSink(config)),
  doc: {
    wire: '`_bulk` NDJSON, `create` into <index>-<log type>-YYYY.MM.DD with @timestamp, every item checked',
    verified: 'Elasticsearch 8.19.2 and OpenSearch 2.19.6',
  },
};
