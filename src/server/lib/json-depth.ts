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
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * The path of the first object key that appears twice in the same object of `text` (valid JSON),
 * or undefined. JSON.parse keeps the last silently; for an osquery configuration that would drop
 * a scheduled query without a word, so those bodies are refused instead.
 */
export function duplicateKey(text: string): string | undefined {
  // One frame per open object or array: the keys seen (objects) and the path to it.
  const stack: { keys?: Set<string>; path: string; index: number; key?: string }[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (expectKey && top?.keys) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const at = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${top.path}${top.path ? '.' : ''}${key}` : `${top.path}[${JSON.stringify(key)}]`;
        if (top.keys.has(key)) return at;
        top.keys.add(key);
        top.key = at;
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const top = stack[stack.length - 1];
      const path = !top ? '' : top.keys ? (top.key ?? top.path) : `${top.path}[${top.index}]`;
      stack.push(c === '{' ? { keys: new Set(), path, index: 0 } : { path, index: 0 });
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      stack.pop();
      expectKey = false;
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.keys) expectKey = true;
      else if (top) top.index++;
    }
  }
  return undefined;
}
