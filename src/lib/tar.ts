// A POSIX ustar archive of one file: what osquery's carver uploads (compression off).
const BLOCK = 512;

function field(buf: Buffer, offset: number, length: number, value: string): void {
  buf.write(value.slice(0, length), offset, length, 'utf8');
}

const octal = (n: number, width: number) => n.toString(8).padStart(width - 1, '0') + '\0';

export function tarOne(name: string, data: Buffer, mtime = Math.floor(Date.now() / 1000)): Buffer {
  const header = Buffer.alloc(BLOCK, 0);
  const entry = name.replace(/^\/+/, '').slice(-99) || 'file';
  field(header, 0, 100, entry);
  field(header, 100, 8, octal(0o644, 8));
  field(header, 108, 8, octal(0, 8));
  field(header, 116, 8, octal(0, 8));
  field(header, 124, 12, octal(data.length, 12));
  field(header, 136, 12, octal(mtime, 12));
  header.fill(0x20, 148, 156); // checksum computed with its own field as spaces
  field(header, 156, 1, '0');
  field(header, 257, 6, 'ustar\0');
  field(header, 263, 2, '00');
  let sum = 0;
  for (const b of header) sum += b;
  field(header, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
  const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
  return Buffer.concat([header, data, Buffer.alloc(pad + 2 * BLOCK, 0)]);
}
