// Reads the archives osquery's carver uploads (pax tar, optionally zstd) in tests: the regular
// files in them, by name. Small on purpose: ustar headers, pax `path` records, no links.
import { decompress } from 'fzstd';

export interface TarFile {
  name: string;
  data: Buffer;
}

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

export const isZstd = (b: Buffer) => b.subarray(0, 4).equals(ZSTD_MAGIC);

/** The regular files of a tar (or a zstd-compressed tar), in archive order. */
export function tarFiles(archive: Buffer): TarFile[] {
  const tar = isZstd(archive) ? Buffer.from(decompress(archive)) : archive;
  const files: TarFile[] = [];
  let paxPath: string | undefined;
  for (let at = 0; at + 512 <= tar.length;) {
    const h = tar.subarray(at, at + 512);
    if (h.every((x) => x === 0)) break;
    const field = (from: number, len: number) =>
      h
        .subarray(from, from + len)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const prefix = field(345, 155);
    const data = tar.subarray(at + 512, at + 512 + size);
    if (type === 'x') {
      // pax records: "LEN key=value\n"
      for (const rec of data.toString('utf8').split('\n')) {
        const m = /^\d+ path=(.*)$/.exec(rec);
        if (m) paxPath = m[1];
      }
    } else if (type === '0') {
      files.push({ name: paxPath ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100)), data: Buffer.from(data) });
      paxPath = undefined;
    } else {
      paxPath = undefined;
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}
