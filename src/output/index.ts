// The one output system every command uses. A command describes its columns once and calls
// printList / printObject / createListWriter with the parsed -o/--fields/--jq/--no-headers
// options; this module applies the interface rules (architecture.md, "Interface rules"):
// stdout carries results only, machine formats are a contract (API field names, lists as
// arrays, `[]` for none), tables adapt to the terminal and are plain TSV when piped.
import type { IO } from '../io.js';
import { colorsFor } from './color.js';
import { csvRow } from './csv.js';
import { selectFields, validateFields } from './fields.js';
import type { Column, OutputOptions } from './format.js';
import { evalJq } from './jq.js';
import { safeJson, safeText } from './sanitize.js';
import { neverAsWord } from './time.js';
import { renderObjectPlain, renderObjectTTY, resolveColumns } from './table.js';
import { createListWriter, drained, loadYaml } from './writer.js';

export { OUTPUT_FORMATS, parseOutputFormat, isOutputFormat } from './format.js';
export type { Column, ColumnKind, OutputFormat, OutputOptions } from './format.js';
export { FieldError, FormatError, JqError } from './errors.js';
export { parseFields, getPath, selectFields, validateFields } from './fields.js';
export { relativeTime, isNever, isTimestamp, neverAsWord, setTimeStyle, tableTime, TIME_STYLES, type TimeStyle } from './time.js';
export { colorsFor, colorStatus, statusTone, type Colors, type StatusTone } from './color.js';
export { cellText } from './cell.js';
export { evalJq } from './jq.js';
export { safeLine, safeText } from './sanitize.js';
export { createListWriter, type ListWriter } from './writer.js';

/**
 * Prints a list. json: a pretty array (`[]` when empty); jsonl: one object a line (nothing
 * when empty); yaml; csv (header unless noHeaders); table: fitted to the terminal, or TSV
 * with a header row when piped. With `fields`, every format shows exactly those fields;
 * with `jq`, the format is ignored and jq's results are printed.
 */
export async function printList<T>(io: IO, opts: OutputOptions, rows: readonly T[], columns: readonly Column<T>[]): Promise<void> {
  const w = createListWriter(io, opts, columns);
  await w.write(rows);
  await w.end();
}

/**
 * Prints one resource (e.g. `nodes show`). json/jsonl/yaml/--jq: the object itself. table on a
 * terminal: `FIELD  value` lines (nested objects as dotted keys, times with their relative
 * age); piped: `key<TAB>value` lines. `columns`, when given, are the fields the table view
 * shows (only those, in that order, with their kinds); machine formats always carry the whole
 * object unless `fields` selects.
 */
export async function printObject<T>(io: IO, opts: OutputOptions, obj: T, columns: readonly Column<T>[] = []): Promise<void> {
  const fields = opts.fields && opts.fields.length > 0 ? opts.fields : undefined;
  if (fields) validateFields(fields, obj, columns, opts.schema);
  const value: unknown = fields ? selectFields(obj, fields, columns) : obj;
  let text: string;
  if (opts.jq !== undefined) {
    text = await evalJq(value, opts.jq, { terminal: io.stdoutIsTTY });
  } else {
    switch (opts.format) {
      case 'json':
        text = `${safeJson(JSON.stringify(value, null, 2) ?? 'null')}\n`;
        break;
      case 'jsonl':
        text = `${safeJson(JSON.stringify(value) ?? 'null')}\n`;
        break;
      case 'yaml':
        text = (await loadYaml())(value);
        break;
      case 'csv': {
        const cols = resolveColumns(columns, fields, obj);
        text =
          (opts.noHeaders ? '' : csvRow(cols.map((c) => c.key))) + csvRow(cols.map((c) => neverAsWord(c.value(obj), c.kind === 'time')));
        break;
      }
      case 'table': {
        const cols = fields || columns.length > 0 ? resolveColumns(columns, fields, obj) : undefined;
        text = io.stdoutIsTTY ? renderObjectTTY(obj, cols, { colors: colorsFor(io), now: new Date() }) : renderObjectPlain(obj, cols);
        break;
      }
    }
  }
  if (text !== '') {
    io.out(text);
    await drained(io.stdout);
  }
}

/**
 * Raw text on stdout, with exactly one trailing newline added if missing. '' prints nothing.
 * Piped, the text is kept as is (`enroll show prod enroll.sh | sh`); at a terminal, control and
 * bidi characters are shown escaped, lines and tabs kept.
 */
export function printText(io: IO, text: string): void {
  if (text === '') return;
  const shown = io.stdoutIsTTY ? safeText(text) : text;
  io.out(shown.endsWith('\n') ? shown : `${shown}\n`);
}
