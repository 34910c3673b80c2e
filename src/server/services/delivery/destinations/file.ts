// file: one envelope (sink.ts) per line, appended to a file inside --sink-dir (issue 18): created
// 0600, opened with O_NOFOLLOW, written through a handle kept open, rotated by size
// (max_size_mb, default 100; max_files rotated files kept, default 5). One process delivers a
// sink at a time (the runner's lease), but the lease may move between --workers processes and
// replicas on one host, so before each write the handle is checked against the path (another
// process may have rotated it) and a rotation happens once, under a lock file.
import { constants, type PathLike } from 'node:fs';
import { mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { Type } from '@sinclair/typebox';
import { envelope, type Destination, type Sink, type SinkEntry } from '../sink.js';

const DEFAULT_MAX_MB = 100;
const DEFAULT_KEEP = 5;

const schema = Type.Object(
  {
    path: Type.String({ minLength: 1 }),
    max_size_mb: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    max_files: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  },
  { additionalProperties: false },
);
type FileConfig = { path: string; max_size_mb?: number; max_files?: number };

/** A file sink path resolves inside the sink directory, or this says why not. */
export function filePathProblem(path: string, sinkDir: string): string | undefined {
  if (path.includes('\0')) return 'the file sink path contains NUL';
  const full = resolve(sinkDir, path);
  const rel = relative(sinkDir, full);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
    return `file sinks write inside the sink directory ${sinkDir} (--sink-dir): "${path}" is outside it`;
  return undefined;
}

interface OpenFile {
  path: string;
  handle: FileHandle;
  size: number;
  /** The inode opened: another process that rotated the path leaves it behind. */
  ino: number;
}

class FileSink implements Sink {
  private file?: OpenFile;
  private readonly full: string;
  private readonly maxBytes: number;
  private readonly keep: number;

  constructor(config: FileConfig, sinkDir: string) {
    this.full = resolve(sinkDir, config.path);
    this.maxBytes = (config.max_size_mb ?? DEFAULT_MAX_MB) * 1024 * 1024;
    this.keep = config.max_files ?? DEFAULT_KEEP;
  }

  async send(batch: SinkEntry[]) {
    const lines = batch.map((e) => Buffer.from(envelope(e) + '\n', 'utf8'));
    let written = 0;
    // In chunks that each fit the current file: a batch may span a rotation.
    for (let i = 0; i < lines.length;) {
      const f = await this.fileFor(lines[i].length);
      let size = 0;
      let j = i;
      while (j < lines.length && (j === i || f.size + size + lines[j].length <= this.maxBytes)) size += lines[j++].length;
      const data = Buffer.concat(lines.slice(i, j), size);
      await f.handle.write(data);
      f.size += data.length;
      written += data.length;
      i = j;
    }
    return { bytes: written, answer: `wrote ${written} bytes to ${this.full}` };
  }

  /** The open file, rotated first when this write would take it past its size. */
  private async fileFor(adding: number): Promise<OpenFile> {
    if (this.file) {
      // Another process may have rotated it: write where the path points now, sized by what all wrote.
      const [at, mine] = await Promise.all([stat(this.full).catch(() => undefined), this.file.handle.stat()]);
      if (!at || at.ino !== mine.ino || at.dev !== mine.dev) await this.closeFile();
      else this.file.size = mine.size;
    }
    if (this.file && this.file.size > 0 && this.file.size + adding > this.maxBytes) {
      const ino = this.file.ino;
      await this.closeFile();
      await rotateOnce(this.full, this.keep, ino);
    }
    if (!this.file) {
      await mkdir(join(this.full, '..'), { recursive: true, mode: 0o700 });
      // O_NOFOLLOW: a symlink planted at the path is refused, not written through.
      const handle = await open(this.full, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      const at = await handle.stat();
      this.file = { path: this.full, handle, size: at.size, ino: at.ino };
      if (this.file.size > 0 && this.file.size + adding > this.maxBytes) {
        await this.closeFile();
        await rotateOnce(this.full, this.keep, at.ino);
        return this.fileFor(adding);
      }
    }
    return this.file;
  }

  private async closeFile(): Promise<void> {
    const f = this.file;
    this.file = undefined;
    await f?.handle.close().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.closeFile();
  }
}

/**
 * Rotates `path` if it is still the file `ino` that was found full. A lock file beside it
 * (created exclusively, removed after) keeps two processes from shifting the chain together,
 * which would delete the oldest file early; a lock left by a killed process is taken after 30 s.
 */
async function rotateOnce(path: string, keep: number, ino: number): Promise<void> {
  const lockPath = `${path}.rotating`;
  let lock: FileHandle | undefined;
  for (let attempt = 0; attempt < 2 && !lock; attempt++) {
    try {
      lock = await open(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const held = await stat(lockPath).catch(() => undefined);
      if (held && Date.now() - held.mtimeMs < 30_000) return; // another process is rotating it now
      await unlink(lockPath).catch(() => undefined);
    }
  }
  if (!lock) return;
  try {
    const now = await stat(path).catch(() => undefined);
    if (now && now.ino === ino) await rotate(path, keep);
  } finally {
    await lock.close().catch(() => undefined);
    await unlink(lockPath).catch(() => undefined);
  }
}

/** path -> path.1 -> ... -> path.keep (the oldest deleted); keep 0 just deletes it. */
async function rotate(path: string, keep: number): Promise<void> {
  const exists = (p: PathLike) =>
    stat(p).then(
      () => true,
      () => false,
    );
  if (keep === 0) {
    await unlink(path).catch(() => undefined);
    return;
  }
  await unlink(`${path}.${keep}`).catch(() => undefined);
  for (let i = keep - 1; i >= 1; i--) if (await exists(`${path}.${i}`)) await rename(`${path}.${i}`, `${path}.${i + 1}`);
  if (await exists(path)) await rename(path, `${path}.1`);
}

export const file: Destination<FileConfig> = {
  type: 'file',
  schema,
  secrets: [],
  check(config, ctx) {
    const problem = filePathProblem(config.path, ctx.sinkDir);
    return problem ? { field: 'path', message: problem } : undefined;
  },
  batch: { maxEntries: 1000, maxBytes: 1024 * 1024 },
  // One file appended in spool order (a batch may span a rotation): one batch at a time.
  maxInFlight: () => 1,
  open(config, ctx) {
    // Checked at the API; checked again here should a stored config predate the check.
    const problem = filePathProblem(config.path, ctx.sinkDir);
    if (problem) return Promise.reject(new Error(problem));
    return Promise.resolve(new FileSink(config, ctx.sinkDir));
  },
  doc: {
    wire: 'one JSON envelope per line (NDJSON), appended; rotated by size',
    verified: 'the file system (our own tests read the files)',
  },
};
