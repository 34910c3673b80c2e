// Lists, printed batch by batch (`--all` fetches page after page): memory stays flat in the
// total size for json, jsonl, yaml, csv and the piped table (TSV). The terminal table fits its
// widths to the first non-empty batch and truncates later rows to them. --jq needs the whole
// value, so it buffers everything and runs at end().
import type { IO } from '../io.js';
import { colorsFor } from './color.js';
import { csvRow } from './csv.js';
import { selectFields, validateFields } from './fields.js';
import type { Column, OutputOptions } from './format.js';
import { evalJq, JsonText } from './jq.js';
import { safeJson, safeYaml } from './sanitize.js';
import { neverAsWord } from './time.js';
import {
  growForStream,
  layoutTable,
  resolveColumns,
  tsvHeaderLine,
  tsvRowLine,
  ttyCells,
  ttyHeaderLine,
  ttyRowLine,
  type ResolvedColumn,
} from './table.js';

export interface ListWriter<T> {
  /** Prints a batch (validating --fields against the first item ever written). */
  write(items: readonly T[]): Promise<void>;
  /** Closes the list (json's `]`, or `[]` when nothing was written; yaml/--jq print here). */
  end(): Promise<void>;
  /** Items written so far: lets a command say "no nodes found" on stderr after end(). */
  readonly count: number;
}

interface Sink<T> {
  /** `first` is the first item of the whole list (for columns), set from the first non-empty batch on. */
  write(items: readonly T[], first: T): string | Promise<string>;
  end(first: T | undefined): string | Promise<string>;
}

/** Waits while the stream's buffer is full (a slow pipe), so a long --all run does not pile up in memory. */
export function drained(stream: IO['stdout']): Promise<void> {
  if (!stream.writableNeedDrain || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    // A closed or failed stream (EPIPE) ends the wait too; reporting it is the caller's job.
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

export async function loadYaml(): Promise<(v: unknown) => string> {
  const YAML = await import('yaml');
  return (v) => safeYaml(YAML, v, { lineWidth: 0, aliasDuplicateObjects: false });
}

const indent = (s: string) => `  ${s.replace(/\n/g, '\n  ')}`;

/** How a terminal table of a stream is laid out (issue 20). */
export interface StreamLayout {
  /**
   * More batches follow the first: the terminal's spare width goes to the text columns now, so
   * later, longer values still fit, instead of every width being fixed by the first batch.
   */
  stream?: boolean;
  /** Per column key: a width known in advance (the targets' longest hostname), and whether it is an identifier (never cut). */
  hints?: Record<string, { width?: number; id?: boolean }>;
}

export function createListWriter<T>(
  io: IO,
  opts: OutputOptions,
  columns: readonly Column<T>[] = [],
  layout: StreamLayout = {},
): ListWriter<T> {
  const fields = opts.fields && opts.fields.length > 0 ? opts.fields : undefined;
  const withHeader = !opts.noHeaders;
  const project = (row: T): unknown => (fields ? selectFields(row, fields, columns) : row);
  const sink = makeSink<T>(io, opts, columns, fields, withHeader, project, layout);
  // With a schema, a bad field is refused before anything is printed (or fetched).
  if (fields && opts.schema) validateFields(fields, undefined, columns, opts.schema);

  let first: T | undefined;
  let hasFirst = false;
  let count = 0;
  let ended = false;

  return {
    get count() {
      return count;
    },
    async write(items) {
      if (ended) throw new Error('ListWriter: write() after end()');
      if (items.length === 0) return;
      if (!hasFirst) {
        if (fields && !opts.schema) validateFields(fields, items[0], columns);
        first = items[0];
        hasFirst = true;
      }
      count += items.length;
      const text = await sink.write(items, first as T);
      if (text !== '') {
        io.out(text);
        await drained(io.stdout);
      }
    },
    async end() {
      if (ended) return;
      ended = true;
      if (!hasFirst && fields && !opts.schema) validateFields(fields, undefined, columns);
      const text = await sink.end(hasFirst ? first : undefined);
      if (text !== '') {
        io.out(text);
        await drained(io.stdout);
      }
    },
  };
}

function makeSink<T>(
  io: IO,
  opts: OutputOptions,
  columns: readonly Column<T>[],
  fields: readonly string[] | undefined,
  withHeader: boolean,
  project: (row: T) => unknown,
  layout: StreamLayout,
): Sink<T> {
  if (opts.jq !== undefined) {
    const parts: string[] = [];
    const jq = opts.jq;
    return {
      write(items) {
        for (const it of items) parts.push(JSON.stringify(project(it)) ?? 'null');
        return '';
      },
      end: () => evalJq(new JsonText(`[${parts.join(',')}]`), jq, { terminal: io.stdoutIsTTY }),
    };
  }

  switch (opts.format) {
    case 'json': {
      let started = false;
      return {
        write(items) {
          let s = '';
          for (const it of items) {
            s += (started ? ',\n' : '[\n') + indent(safeJson(JSON.stringify(project(it), null, 2) ?? 'null'));
            started = true;
          }
          return s;
        },
        end: () => (started ? '\n]\n' : '[]\n'),
      };
    }
    case 'yaml': {
      // A YAML sequence printed a batch at a time is the same text as the whole list printed
      // at once ("- " items at column 0), so yaml streams like json instead of buffering.
      let started = false;
      let stringify: ((v: unknown) => string) | undefined;
      return {
        async write(items) {
          stringify ??= await loadYaml();
          started = true;
          return stringify(items.map(project));
        },
        end: () => (started ? '' : '[]\n'),
      };
    }
    case 'jsonl':
      return {
        write: (items) => items.map((it) => `${safeJson(JSON.stringify(project(it)) ?? 'null')}\n`).join(''),
        end: () => '',
      };
    case 'csv': {
      let cols: ResolvedColumn<T>[] | undefined;
      return {
        write(items, first) {
          let s = '';
          if (!cols) {
            cols = resolveColumns(columns, fields, first);
            if (withHeader) s += csvRow(cols.map((c) => c.key));
          }
          const cs = cols;
          for (const it of items) s += csvRow(cs.map((c) => neverAsWord(c.value(it), c.kind === 'time')));
          return s;
        },
        end(first) {
          if (cols || first !== undefined || !withHeader) return '';
          const empty = resolveColumns(columns, fields, undefined);
          return empty.length > 0 ? csvRow(empty.map((c) => c.key)) : '';
        },
      };
    }
    case 'table':
      return io.stdoutIsTTY ? ttyTableSink(io, columns, fields, withHeader, !!opts.wide, layout) : tsvSink(columns, fields, withHeader);
  }
}

function tsvSink<T>(columns: readonly Column<T>[], fields: readonly string[] | undefined, withHeader: boolean): Sink<T> {
  let cols: ResolvedColumn<T>[] | undefined;
  return {
    write(items, first) {
      let s = '';
      if (!cols) {
        cols = resolveColumns(columns, fields, first);
        if (withHeader) s += tsvHeaderLine(cols);
      }
      const cs = cols;
      for (const it of items) s += tsvRowLine(cs, it);
      return s;
    },
    end(first) {
      // An empty list piped still gets its header: the columns are known, and scripts can
      // rely on line 1 being the header.
      if (cols || first !== undefined || !withHeader) return '';
      const empty = resolveColumns(columns, fields, undefined);
      return empty.length > 0 ? tsvHeaderLine(empty) : '';
    },
  };
}

function ttyTableSink<T>(
  io: IO,
  columns: readonly Column<T>[],
  fields: readonly string[] | undefined,
  withHeader: boolean,
  wide: boolean,
  layout: StreamLayout,
): Sink<T> {
  const colors = colorsFor(io);
  const now = new Date();
  let cols: ResolvedColumn<T>[] | undefined;
  let widths: number[] | undefined;
  return {
    write(items, first) {
      let s = '';
      const cs = (cols ??= resolveColumns(columns, fields, first).map((c) => {
        const h = layout.hints?.[c.key];
        return h ? { ...c, id: c.id || h.id, minWidth: h.width } : c;
      }));
      const cells = items.map((it) => ttyCells(cs, it, now));
      if (!widths) {
        widths = layoutTable(cs, cells, withHeader, io.columns, wide);
        if (layout.stream && !wide) widths = growForStream(cs, widths, io.columns);
        if (withHeader) s += ttyHeaderLine(cs, widths, colors);
      }
      const ws = widths;
      for (const row of cells) s += ttyRowLine(cs, row, ws, colors);
      return s;
    },
    // An empty list on a terminal prints nothing (a lone header row is noise); the command
    // says "no nodes found" on stderr if it wants to (see ListWriter.count).
    end: () => '',
  };
}
