// A sink's `config` travels as the UTF-8 bytes of its JSON (api-spec.md 2.4); people read JSON.
import type { LogSink } from '../../api/index.js';
import { UsageError } from '../../errors.js';

/**
 * The JSON value the bytes hold; the text itself when it is not JSON; the bytes unchanged when
 * they are not valid UTF-8 (or not bytes at all), so nothing the server sent is lost.
 */
export function decodeSinkConfig(bytes: unknown): unknown {
  if (!Array.isArray(bytes) || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return bytes;
  if (bytes.length === 0) return {};
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes as number[]));
  } catch {
    return bytes;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export type ShownSink = Omit<LogSink, 'config'> & { config: unknown };

export function showSink(s: LogSink): ShownSink {
  return { ...s, config: decodeSinkConfig(s.config) };
}

/** The --config text (inline JSON, or read from @file / - by the caller) as a JSON object. */
export function parseSinkConfig(text: string, from = '--config'): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${from}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${from}: expected a JSON object`);
  return v as Record<string, unknown>;
}
