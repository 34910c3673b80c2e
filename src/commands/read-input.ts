// Text from a file or, for "-", from stdin (`api --input`, `sinks add --config @file|-`).
import { readFile } from 'node:fs/promises';
import type { IO } from '../io.js';
import { UsageError } from '../errors.js';

export async function readInput(io: IO, file: string, flag: string): Promise<string> {
  if (file === '-') {
    if (io.stdin.isTTY) throw new UsageError(`${flag} -: reads standard input; pipe the content in`);
    const chunks: Buffer[] = [];
    for await (const c of io.stdin) chunks.push(Buffer.from(c as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}
