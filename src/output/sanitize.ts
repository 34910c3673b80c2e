// Terminal safety: text that comes from the server or from data (names, audit lines, error and
// message text) must never reach a terminal as a control sequence. A failed-login username such
// as "\x1b[2J" would clear the admin's screen, OSC 0/52/8 would set the title, write the
// clipboard or plant a link, and a bidi override turns "invoice\u202efdp.exe" into what looks
// like "invoiceexe.pdf". The one module every printer and the error writer use:
// - C0 controls, DEL, C1 controls and the bidi controls (U+061C, U+200E/F, U+202A-U+202E,
//   U+2066-U+2069) are shown escaped (`\x1b`, `\u202e`), so the admin sees what was sent;
// - JSON and YAML keep them as escapes inside strings, so the data survives a round trip;
// - csv cells a spreadsheet would run as a formula get a leading `'` (OWASP).
// Backslashes are left alone: escaping is for the eye, not a reversible encoding.

/** Bidi controls that reorder what follows them on screen. */
const BIDI = '\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069';

const UNSAFE_ALL = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI}]`, 'g');
/** As UNSAFE_ALL, but newline and tab pass (multi-line messages). */

const UNSAFE_KEEP_LINES = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${BIDI}]`, 'g');
/** What JSON.stringify leaves raw: DEL, C1, bidi. */
const UNSAFE_IN_JSON = new RegExp(`[\\u007f-\\u009f${BIDI}]`, 'g');

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** `\n`, `\r`, `\t`; `\x1b` for the other C0/DEL/C1; `\u202e` for the bidi controls. */
function escapeChar(ch: string): string {
  if (ch === '\n') return '\\n';
  if (ch === '\r') return '\\r';
  if (ch === '\t') return '\\t';
  const cp = ch.codePointAt(0) ?? 0;
  return cp <= 0xff ? `\\x${hex(cp, 2)}` : `\\u${hex(cp, 4)}`;
}

/** One line for a terminal: every control and bidi character escaped, newlines included. */
export function safeLine(s: string): string {
  return s.replace(UNSAFE_ALL, escapeChar);
}

/** Messages, hints and errors: newlines and tabs pass, every other control is escaped. */
export function safeText(s: string): string {
  return s.replace(UNSAFE_KEEP_LINES, escapeChar);
}

/**
 * A table, tsv or csv cell: single-line. Tabs and line breaks become a space (so a multi-line
 * description stays readable and a TSV row stays one row), other controls are escaped.
 */
export function safeCell(s: string): string {
  return safeLine(s.replace(/\r\n|[\t\n\r]/g, ' '));
}

/**
 * JSON text (from JSON.stringify, which escapes C0 but not DEL, C1 or bidi controls): the rest
 * as \uXXXX. These characters only occur inside JSON strings, where \uXXXX is the same value.
 */
export function safeJson(text: string): string {
  return text.replace(UNSAFE_IN_JSON, (ch) => `\\u${hex(ch.codePointAt(0) ?? 0, 4)}`);
}

/** A csv cell a spreadsheet would evaluate (=, +, -, @, tab, CR first) gets a leading `'`. */
export function csvFormulaSafe(s: string): string {
  return /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
}

type YamlModule = typeof import('yaml');

/**
 * YAML text for `v` with the characters of UNSAFE_IN_JSON escaped. The yaml library escapes C0
 * itself (it double-quotes such strings) but prints DEL, C1 and bidi controls raw; strings that
 * hold them are forced into double quotes, where `\uXXXX` is the same value. Only done when the
 * plain text has one (the common case costs nothing more).
 */
export function safeYaml(YAML: YamlModule, v: unknown, opts: import('yaml').ToStringOptions & import('yaml').CreateNodeOptions): string {
  const text = YAML.stringify(v, opts) ?? 'null\n';
  UNSAFE_IN_JSON.lastIndex = 0;
  if (!UNSAFE_IN_JSON.test(text)) return text;
  const doc = new YAML.Document(v, opts);
  const risky = new RegExp(UNSAFE_IN_JSON.source);
  YAML.visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && risky.test(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  return safeJson(doc.toString(opts));
}
