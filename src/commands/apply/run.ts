// What `apply` and `diff` do (loaded only by them).
import type { Context } from '../../context.js';
import type { OsqueryConfigView } from '../../api/index.js';
import { CliError, ExitCode, mapError } from '../../errors.js';
import { printObject } from '../../output/index.js';
import type { FleetApi } from '../../client/index.js';
import { DocumentError, loadDocuments, partsOf, plan, renderDiff, summary, type LoadedDocument, type Plan } from './documents.js';
import type { FileOpts } from './options.js';
import { optionWarnings } from '../../lib/osquery-config.js';

interface Planned {
  doc: LoadedDocument;
  current: OsqueryConfigView;
  plan: Plan;
}

/** Reads every environment the documents name and plans each (nothing is written). */
async function planAll(api: FleetApi, docs: LoadedDocument[], prune: boolean): Promise<Planned[]> {
  const out: Planned[] = [];
  for (const doc of docs) {
    const current = await api.config.get(doc.environment);
    // One document per environment, also when one names it by name and another by UUID.
    const twin = out.find((p) => p.current.environment === current.environment);
    if (twin)
      throw new DocumentError(
        `${doc.source}: environment ${current.environment} is already configured by ${twin.doc.source}; one document per environment`,
      );
    out.push({ doc, current, plan: plan(partsOf(current), doc.spec, prune) });
  }
  return out;
}

async function showDiffs(ctx: Context, planned: Planned[]): Promise<void> {
  for (const p of planned) {
    if (p.plan.changes.length === 0) continue;
    ctx.io.out(await renderDiff(p.current.environment, partsOf(p.current), p.plan.after, ctx.io.color));
  }
}

function noteKept(ctx: Context, planned: Planned[]): void {
  for (const p of planned) {
    if (p.plan.kept.length === 0) continue;
    const names = p.plan.kept.map((k) => `${k.part}.${k.name}`);
    const shown = names.length > 8 ? `${names.slice(0, 8).join(', ')} and ${names.length - 8} more` : names.join(', ');
    ctx.io.err(`${p.current.environment}: kept ${shown} (on the server, not in the files; --prune removes them)\n`);
  }
}

export async function runApply(ctx: Context, o: FileOpts): Promise<void> {
  const docs = await loadDocuments(ctx.io, o.file, o.recursive);
  const api = await ctx.api();
  const planned = await planAll(api, docs, Boolean(o.prune));
  const data = ctx.wantsData();
  if (!data) await showDiffs(ctx, planned);
  noteKept(ctx, planned);
  const changing = planned.filter((p) => p.plan.changes.length > 0);
  for (const p of changing)
    if (p.plan.parts.options) for (const w of optionWarnings(p.plan.parts.options)) ctx.io.err(`warning: ${p.current.environment}: ${w}\n`);
  // The server checks every change before any is stored: one refusal changes nothing anywhere.
  const checked = new Map<Planned, string>();
  for (const p of changing)
    checked.set(p, await api.config.check(p.doc.environment, p.plan.parts, { ifMatch: p.current.hash }).catch(failIn(p)));
  const results: { environment: string; changed: boolean; changes: string[]; hash_before: string; hash_after: string; dry_run: boolean }[] =
    [];
  for (const p of planned) {
    const env = p.current.environment;
    let after = p.current.hash;
    if (p.plan.changes.length > 0) {
      if (o.dryRun) after = checked.get(p) ?? '';
      else after = (await api.config.patch(p.doc.environment, p.plan.parts, { ifMatch: p.current.hash }).catch(failIn(p))).hash;
    }
    const changes = p.plan.changes.map((c) => `${c.op}${c.part}${c.name ? `.${c.name}` : ''}`);
    results.push({
      environment: env,
      changed: changes.length > 0,
      changes,
      hash_before: p.current.hash,
      hash_after: after,
      dry_run: Boolean(o.dryRun),
    });
    if (!data) {
      const what =
        changes.length === 0
          ? 'unchanged'
          : `${o.dryRun ? 'would be configured' : 'configured'} (${summary(p.plan.changes)}; hash ${p.current.hash.slice(0, 12)} -> ${after.slice(0, 12) || '?'})`;
      ctx.io.out(`osqueryconfig/${env} ${what}${o.dryRun ? ' (dry run)' : ''}\n`);
    }
  }
  if (data) await printObject(ctx.io, ctx.output(), results);
}

/** A server refusal names the document it was about. */
function failIn(p: Planned) {
  return (e: unknown): never => {
    const m = mapError(e);
    throw new CliError(`${p.doc.source}: ${p.current.environment}: ${m.message}`, m.exitCode, m.hint);
  };
}

export async function runDiff(ctx: Context, o: FileOpts): Promise<void> {
  try {
    const docs = await loadDocuments(ctx.io, o.file, o.recursive);
    const api = await ctx.api();
    const planned = await planAll(api, docs, Boolean(o.prune));
    await showDiffs(ctx, planned);
    noteKept(ctx, planned);
    if (planned.some((p) => p.plan.changes.length > 0)) process.exitCode = 1;
  } catch (e) {
    // Exit 1 means "differences" here (kubectl diff): errors keep their code, but never 1.
    const m = mapError(e);
    if (m.exitCode === ExitCode.error) throw new CliError(m.message, ExitCode.usage, m.hint);
    throw e;
  }
}
