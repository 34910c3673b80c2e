// The lines a peer process writes to a file, read while it is still writing them. A read of a
// regular file can catch the writer mid-line: one write(2) is not atomic to a concurrent read,
// and a long line (a reassembled GELF message, rsyslog's output of a 1 MiB frame) is written in
// several pieces. So only lines ended by "\n" are returned; the bytes after the last newline are
// kept and completed by a later read. Bytes, not text, are carried over, so a UTF-8 character
// split between two reads is decoded whole.
import { closeSync, openSync, readSync } from 'node:fs';

export class LineFile {
  private offset = 0;
  private rest: Buffer = Buffer.alloc(0);
  private readonly whole: string[] = [];

  constructor(readonly path: string) {}

  /** Every whole line written so far (empty lines included), in order; [] while the file does not exist. */
  lines(): string[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [...this.whole];
      throw e;
    }
    const chunks: Buffer[] = [this.rest];
    try {
      const buf = Buffer.alloc(1 << 16);
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, this.offset);
        if (n === 0) break;
        this.offset += n;
        chunks.push(Buffer.from(buf.subarray(0, n)));
      }
    } finally {
      closeSync(fd);
    }
    const all = Buffer.concat(chunks);
    const end = all.lastIndexOf(0x0a);
    if (end >= 0) {
      this.whole.push(...all.subarray(0, end).toString('utf8').split('\n'));
      this.rest = Buffer.from(all.subarray(end + 1));
    } else {
      this.rest = all;
    }
    return [...this.whole];
  }
}
