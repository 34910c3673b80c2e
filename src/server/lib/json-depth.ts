// JSON nesting depth, checked on the raw text before parsing: a body nested thousands deep
// would overflow the stack of whatever walks it recursively later (validation, serialisation).

/** Deepest nesting accepted in a request body; real bodies (log-sink configs) need a handful. */
export const MAX_JSON_DEPTH = 64;

/** True when arrays/objects in `text` nest deeper than `limit` (strings are skipped). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
