import type { Command } from 'commander';
import { verb } from '../define.js';
import { PAGE_SIZE_MAX } from '../../api/constants.js';
import { ApiError, UsageError } from '../../errors.js';
import { createListWriter, printList, printObject, printText } from '../../output/index.js';
import type { Context } from '../../context.js';
import type { HttpClient, Query } from '../../client/http.js';
import { readInput } from '../read-input.js';
import { buildBody, buildQuery, parseField, type FieldSpec } from './fields.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

interface ApiOpts {
  rawField: string[];
  field: string[];
  input?: string;
  paginate?: boolean;
}

const collect = (v: string, prev: string[]) => [...prev, v];

/** PATH relative to the server; a full URL only when it points at the same server (the token goes with it). */
export function requestPath(path: string, baseUrl: string): string {
  if (/^https?:\/\//i.test(path)) {
    const u = new URL(path);
    if (u.origin !== new URL(baseUrl).origin)
      throw new UsageError(`${path} is not on ${new URL(baseUrl).origin}: pass a path such as /api/v1/stats`);
    return u.toString();
  }
  return path.replace(/^\/+/, '');
}

function parseJson(text: string): { json: true; value: unknown } | { json: false; text: string } {
  if (text.trim() === '') return { json: false, text: '' };
  try {
    return { json: true, value: JSON.parse(text) };
  } catch {
    return { json: false, text };
  }
}

/** Without -o/--json/--jq the answer is shown as JSON (as the server sent it, pretty-printed). */
function outputFor(ctx: Context) {
  const o = ctx.output();
  const explicit = ctx.globals.output !== undefined || ctx.globals.json;
  return explicit ? o : { ...o, format: 'json' as const };
}

async function show(ctx: Context, value: unknown): Promise<void> {
  const out = outputFor(ctx);
  if (Array.isArray(value) && out.format !== 'json' && out.jq === undefined) await printList(ctx.io, out, value, []);
  else await printObject(ctx.io, out, value);
}

/** Error answers: the body goes to stdout as JSON (scripts can read the code), the error line to stderr. */
function printErrorBody(ctx: Context, e: ApiError): void {
  const body = Object.keys(e.body).length > 0 ? e.body : e.message;
  ctx.io.out(`${JSON.stringify(body, null, 2)}\n`);
}

async function paginateAll(ctx: Context, http: HttpClient, path: string, query: Query): Promise<void> {
  const pageSize = query.page_size ?? PAGE_SIZE_MAX;
  const writer = createListWriter(ctx.io, outputFor(ctx), []);
  for (let page = Number(query.page ?? 1); ; page++) {
    const text = await http.request<string>('GET', path, { query: { ...query, page, page_size: pageSize }, raw: true });
    const parsed = parseJson(text);
    const v = parsed.json ? (parsed.value as Record<string, unknown>) : undefined;
    if (!v || typeof v !== 'object' || !Array.isArray(v.items) || typeof v.total_pages !== 'number') {
      if (page === Number(query.page ?? 1)) {
        ctx.warnOnce('paginate', 'the answer is not a paginated list ({items, total_pages}); printed as is');
        if (parsed.json) await show(ctx, parsed.value);
        else printText(ctx.io, parsed.text);
        return;
      }
      throw new Error(`page ${page} of ${path} is not a paginated list`);
    }
    await writer.write(v.items as unknown[]);
    if (page >= v.total_pages || v.items.length === 0) break;
  }
  await writer.end();
}

export function registerApi(program: Command): void {
  verb<ApiOpts>(
    program,
    {
      name: 'api',
      summary: 'Make an authenticated request to any API endpoint',
      description:
        'Send METHOD PATH to the server with the stored token, like `gh api`. PATH is relative to the server\n' +
        '(/api/v1/stats or api/v1/nodes/prod?status=active). With only PATH the method is GET, or POST when\n' +
        'fields or --input are given (GET again with --paginate).\n\n' +
        'Parameters: -f key=value adds a string, -F key=value a typed value (true, false, null and numbers\n' +
        'become JSON; @FILE or @- read the value from a file or stdin). Keys nest: -F a[b]=1, -f uuids[]=x.\n' +
        'For GET they are query parameters; otherwise they make the JSON body. --input FILE (or - for stdin)\n' +
        'sends that JSON as the body instead, and the fields then go into the query string.\n\n' +
        '--paginate (GET) follows `page` up to `total_pages` (page_size 500 unless given) and prints every\n' +
        '`items` entry as one JSON array (-o jsonl: one a line).\n\n' +
        'The answer is printed as JSON (-o yaml/jsonl and --jq apply). On an HTTP error the error body is\n' +
        'printed to stdout as JSON too, the `error:` line to stderr, and the exit code is the usual one\n' +
        '(404 -> 3, 401 -> 4, 403 -> 5, 409 -> 6, 429/503 -> 7, other errors 1).',
      examples: [
        'fleetctl api GET /api/v1/stats',
        'fleetctl api /api/v1/nodes/prod -f status=inactive -f platform=linux --paginate --jq ".[].hostname"',
        'fleetctl api POST /api/v1/tags/prod/tag -f name=pci -f uuids[]=89915ab5-8bfa-4cb5-ac75-cfe1d7626738',
        'fleetctl api PATCH /api/v1/settings/admin/inactive_hours -F integer=48',
        'echo \'{"source_environment_id":1,"target_environment_id":3}\' | fleetctl api POST /api/v1/log-sinks/clone --input -',
      ],
    },
    (cmd) =>
      cmd
        .argument('<method>', `HTTP method (${METHODS.join(', ')}), or the path for a GET`)
        .argument('[path]', 'path on the server, e.g. /api/v1/stats')
        .option('-f, --raw-field <key=value>', 'add a string parameter (repeatable)', collect, [])
        .option('-F, --field <key=value>', 'add a typed parameter: true/false/null/numbers as JSON, @FILE read (repeatable)', collect, [])
        .option('--input <file>', 'JSON body from a file, or - for stdin')
        .option('--paginate', 'GET every page and print all items as one array'),
    async (ctx, args, o) => {
      let [method, path] = args as [string, string | undefined];
      if (path === undefined) {
        path = method;
        method = !o.paginate && (o.rawField.length || o.field.length || o.input !== undefined) ? 'POST' : 'GET';
      }
      method = method.toUpperCase();
      if (!(METHODS as readonly string[]).includes(method))
        throw new UsageError(`unknown method "${method}": use one of ${METHODS.join(', ')}`);
      if (o.paginate && method !== 'GET') throw new UsageError('--paginate works with GET only');

      const fields: FieldSpec[] = o.rawField.map((f) => parseField(f, false));
      for (const spec of o.field) {
        const f = parseField(spec, true);
        if (typeof f.value === 'string' && f.value.startsWith('@'))
          f.value = await readInput(ctx.io, f.value.slice(1), `-F ${f.path.join('.')}`);
        fields.push(f);
      }
      let body: unknown;
      let query: Query = {};
      if (o.input !== undefined) {
        const text = await readInput(ctx.io, o.input, '--input');
        if (text.trim() !== '') {
          try {
            body = JSON.parse(text);
          } catch (e) {
            throw new UsageError(`--input: not valid JSON (${(e as Error).message})`);
          }
        }
        query = buildQuery(fields);
      } else if (method === 'GET') {
        query = buildQuery(fields);
      } else if (fields.length > 0) {
        body = buildBody(fields);
      }

      const api = await ctx.api();
      const target = requestPath(path, api.http.baseUrl);
      try {
        if (o.paginate) return await paginateAll(ctx, api.http, target, query);
        const text = await api.http.request<string>(method, target, { query, body, raw: true });
        const parsed = parseJson(text);
        if (parsed.json) await show(ctx, parsed.value);
        else printText(ctx.io, parsed.text);
      } catch (e) {
        if (e instanceof ApiError) printErrorBody(ctx, e);
        throw e;
      }
    },
  );
}
