// `fleetctl env config ENV [PART]` (issue 22): print an environment's osquery configuration as
// an apply document, replace a part from a file (--set), show what agents receive (--agent), or
// edit it in $EDITOR the way `kubectl edit` does (checked on save, reopened with the error).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from '../../context.js';
import { CONFIG_PARTS, type ConfigPart, type OsqueryConfigParts } from '../../api/index.js';
import { ApiError, CliError, ExitCode, UsageError } from '../../errors.js';
import { printObject, printText } from '../../output/index.js';
import { ConfigError, isConfigPart, optionWarnings, validatePart } from '../../lib/osquery-config.js';
import { DocumentError, documentYaml, parseDocuments, parseYaml, partsOf, plan, summary, toDocument } from '../apply/documents.js';
import { readInput } from '../read-input.js';

export interface ConfigOpts {
  edit?: boolean;
  set?: string;
  agent?: boolean;
}

function partArg(part: string | undefined, flag = 'PART'): ConfigPart | undefined {
  if (part === undefined) return undefined;
  if (!isConfigPart(part)) throw new UsageError(`invalid ${flag} "${part}"; valid: ${CONFIG_PARTS.join(', ')}`);
  return part;
}

/** `arg`: the PART, or with --set PART the FILE (commander refuses a third word). */
export async function runEnvConfig(ctx: Context, env: string, arg: string | undefined, o: ConfigOpts): Promise<void> {
  const modes = [o.edit, o.set !== undefined, o.agent].filter(Boolean).length;
  if (modes > 1) throw new UsageError('use one of --edit, --set and --agent');
  if (o.set !== undefined) {
    const part = partArg(o.set, '--set part')!;
    if (!arg)
      throw new UsageError(
        `--set ${part} needs the file with the new ${part} (or - for stdin)`,
        `fleetctl env config ${env} --set ${part} ${part}.yaml`,
      );
    return setPart(ctx, env, part, arg);
  }
  const part = partArg(arg);
  if (o.agent) {
    if (part) throw new UsageError('--agent shows the whole configuration agents receive: leave out PART');
    const api = await ctx.api();
    const view = await api.config.agent(env);
    if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), view);
    const { loadYaml } = await import('../../output/writer.js');
    printText(ctx.io, (await loadYaml())(view));
    return;
  }
  if (o.edit) return edit(ctx, env, part);
  const api = await ctx.api();
  const doc = toDocument(await api.config.get(env, part));
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), doc);
  printText(ctx.io, await documentYaml(doc));
}

/** A part's new content from a file: YAML or JSON (a key given twice is an error, not dropped). */
async function setPart(ctx: Context, env: string, part: ConfigPart, file: string): Promise<void> {
  const name = file === '-' ? '(stdin)' : file;
  const raw = await parseYaml(name, await readInput(ctx.io, file, `--set ${part}`));
  let value: OsqueryConfigParts[ConfigPart];
  try {
    value = validatePart(part, raw === null ? {} : raw);
  } catch (e) {
    if (e instanceof ConfigError) throw new CliError(`${name}: ${e.message}`);
    throw e;
  }
  if (part === 'options') for (const w of optionWarnings(value as Record<string, unknown>)) ctx.io.err(`warning: ${w}\n`);
  const api = await ctx.api();
  const before = await api.config.get(env, part);
  const after = await api.config.put(env, part, value, { ifMatch: before.hash });
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), toDocument(after));
  ctx.io.err(
    after.changed?.length
      ? `Set ${part} of ${after.environment} (config hash ${before.hash.slice(0, 12)} -> ${after.hash.slice(0, 12)})\n`
      : `${part} of ${after.environment} unchanged\n`,
  );
}

const HEADER = (env: string) =>
  `# The osquery configuration of ${env}. Lines starting with # are ignored; an empty file cancels.\n` +
  '# When you save and close the editor it is checked, then stored if it changed; entries you delete are removed.\n';

function editorCommand(ctx: Context): string {
  const e = process.env.VISUAL || process.env.EDITOR;
  if (e) return e;
  if (!ctx.io.stdin.isTTY || !ctx.io.stdout.isTTY)
    throw new UsageError('--edit needs a terminal (or $EDITOR set to a program that edits a file)');
  return 'vi';
}

/**
 * As git and kubectl do: the editor command goes through the shell, the file as one argument.
 * Waited for without blocking the event loop: an editor stays open for minutes, and the HTTP
 * connection kept alive from the read must be seen closed by the server meanwhile (a blocked
 * loop would reuse the dead socket for the write: ECONNRESET).
 */
async function runEditor(cmd: string, file: string): Promise<void> {
  const child = spawn('/bin/sh', ['-c', `${cmd} "$1"`, 'fleetctl-edit', file], { stdio: 'inherit' });
  // Ctrl-C belongs to the editor while it runs (it is in the same process group).
  const ignore = () => {};
  process.on('SIGINT', ignore);
  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
    }).catch((e: Error) => {
      throw new CliError(`cannot start the editor (${cmd}): ${e.message}`);
    });
    if (code !== 0) throw new CliError(`the editor (${cmd}) exited with ${code ?? signal}; nothing changed`);
  } finally {
    process.off('SIGINT', ignore);
  }
}

const withoutComments = (text: string) =>
  text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .trim();

async function edit(ctx: Context, env: string, part: ConfigPart | undefined): Promise<void> {
  const cmd = editorCommand(ctx);
  const api = await ctx.api();
  const view = await api.config.get(env, part);
  const current = partsOf(view);
  const original = `${HEADER(view.environment)}${await documentYaml(toDocument(view, false))}`;
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-edit-'));
  const file = join(dir, `${view.environment}-osquery-config.yaml`);
  let shown = original;
  let lastError: string | undefined;
  let keep = false;
  try {
    for (;;) {
      writeFileSync(file, shown, { mode: 0o600 });
      await runEditor(cmd, file);
      const edited = readFileSync(file, 'utf8');
      if (withoutComments(edited) === '') {
        ctx.io.err('Edit cancelled: the file was empty; nothing changed.\n');
        return;
      }
      if (withoutComments(edited) === withoutComments(shown)) {
        if (lastError) {
          keep = true;
          throw new CliError(
            `edit cancelled: the configuration still does not hold (${lastError}); nothing changed`,
            ExitCode.error,
            `your edit is kept in ${file}`,
          );
        }
        ctx.io.err('Edit cancelled: no changes made.\n');
        return;
      }
      try {
        const docs = await parseDocuments(file, edited);
        if (docs.length !== 1) throw new DocumentError(`${file}: edit one document, not ${docs.length}`);
        const doc = docs[0];
        if (doc.environment !== view.environment && doc.environment !== env)
          throw new DocumentError(`metadata.environment: this edits ${view.environment}, not ${doc.environment}`);
        // What the editor showed is the whole truth: a part deleted from the file becomes empty.
        const spec: Partial<OsqueryConfigParts> = {};
        for (const p of part ? [part] : CONFIG_PARTS) (spec as Record<string, unknown>)[p] = doc.spec[p] ?? {};
        const extra = Object.keys(doc.spec).find((p) => !(p in spec));
        if (extra) throw new DocumentError(`spec.${extra}: this edits ${part} only`);
        const p = plan(current, spec, true);
        if (p.changes.length === 0) {
          ctx.io.err('Edit cancelled: no changes made.\n');
          return;
        }
        if (p.parts.options) for (const w of optionWarnings(p.parts.options)) ctx.io.err(`warning: ${w}\n`);
        const after = await api.config.patch(env, p.parts, { ifMatch: view.hash });
        if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), toDocument(after));
        ctx.io.err(
          `osqueryconfig/${after.environment} edited (${summary(p.changes)}; config hash ${view.hash.slice(0, 12)} -> ${after.hash.slice(0, 12)})\n`,
        );
        return;
      } catch (e) {
        // Checked on save: a problem reopens the editor with it on top (kubectl edit's way).
        // Messages name the temporary file: in the editor, a line and column say enough.
        const inFile = (m: string): string => {
          if (m.startsWith(`${file}: `)) return m.slice(file.length + 2);
          const at = m.startsWith(file) ? /^:(\d+):(\d+): /.exec(m.slice(file.length)) : null;
          return at ? `line ${at[1]}, column ${at[2]}: ${m.slice(file.length + at[0].length)}` : m;
        };
        const problem = e instanceof DocumentError ? inFile(e.message) : e instanceof ApiError && e.status === 400 ? e.message : undefined;
        if (problem === undefined) throw e;
        lastError = problem;
        if (!ctx.io.stdin.isTTY) ctx.io.err(`error: ${problem}\n`);
        shown = `# error: ${problem.replace(/\n/g, ' ')}\n#\n${edited
          .split('\n')
          .filter((l) => !l.startsWith('# error:') && l !== '#')
          .join('\n')}`;
      }
    }
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
