// The vocabulary of the output system: formats, options and column descriptions.
import { FormatError } from './errors.js';

export const OUTPUT_FORMATS = ['table', 'json', 'jsonl', 'yaml', 'csv'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface OutputOptions {
  format: OutputFormat;
  /** `--fields a,b.c`: which fields, in which order (dotted paths reach into nested objects). */
  fields?: string[];
  /** `--jq EXPR`: applied to the JSON value (after `fields`); replaces the format. */
  jq?: string;
  /** `--no-headers`: no header row in table and csv output. */
  noHeaders?: boolean;
  /** `-o wide`: a table with every column, none dropped or cut for the terminal's width. */
  wide?: boolean;
  /**
   * The JSON Schema of one item (or of the object printed): `--fields` is checked against it
   * rather than against the data. Without one, the first item is the reference.
   */
  schema?: object;
}

/**
 * How a table shows one column.
 * - `time`: relative ("3 minutes ago", "never") on a TTY, the raw timestamp when piped.
 * - `status`: colored by meaning on a TTY with colors (healthy green, degraded yellow, ...).
 * - `number`: right-aligned on a TTY.
 */
export type ColumnKind = 'time' | 'text' | 'status' | 'number' | 'bool';

export interface Column<T> {
  /** Field name; also what `--fields` matches and the csv header. A dotted path by default. */
  key: string;
  /** Table header; default: `key` upper-cased. */
  header?: string;
  /** Cell value; default: dotted-path lookup of `key` in the row. */
  get?: (row: T) => unknown;
  kind?: ColumnKind;
  /** An identifier (UUID, hostname, name): never cut on a terminal; a line overflows instead. */
  id?: boolean;
  /**
   * Dropped on a narrow terminal, the highest number first, before anything would be cut to
   * unreadable; undefined: always shown. `-o wide` shows every column.
   */
  drop?: number;
}

export function isOutputFormat(s: string): s is OutputFormat {
  return (OUTPUT_FORMATS as readonly string[]).includes(s);
}

/** `-o json` etc. Case-insensitive; throws FormatError (exit 2) listing the valid formats. */
export function parseOutputFormat(s: string): OutputFormat {
  const v = s.trim().toLowerCase();
  if (isOutputFormat(v)) return v;
  throw new FormatError(s, OUTPUT_FORMATS);
}

export function defaultHeader(key: string): string {
  return key.toUpperCase();
}
