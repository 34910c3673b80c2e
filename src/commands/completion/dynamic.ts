// Values for shell completion that only fleetctl knows, printed one a line by the hidden
// `fleetctl __complete KIND [PREFIX]` (the generated bash, zsh and fish scripts call it, as
// kubectl and gh do). Profile and environment names come from the config file, no server call;
// hostnames and tag names ask the server with a short timeout. Any failure prints nothing: a
// completion must never print an error into the user's command line.
import type { Context } from '../../context.js';

const TIMEOUT = '2s';

export async function completeValues(ctx: Context, kind: string, prefix: string): Promise<string[]> {
  switch (kind) {
    case 'profile':
      return Object.keys(ctx.config.list());
    case 'env': {
      const p = ctx.profile();
      return [...new Set([...(p?.environments ?? []), ...(p?.env ? [p.env] : [])])];
    }
    case 'node': {
      const api = await ctx.api({ check: true }); // never a prompt to log in again
      const page = await api.nodes.list(ctx.requireEnv(), { q: prefix.length >= 3 ? prefix : undefined, page_size: 100 });
      return page.items.map((n) => n.hostname).filter(Boolean);
    }
    case 'tag': {
      const api = await ctx.api({ check: true });
      return (await api.tags.list(ctx.requireEnv())).map((t) => t.name);
    }
    case 'scheduled-query': {
      // The environment of --env or the profile (the words typed before are not passed here): its
      // schedule (env admins read it) and the queries its nodes reported (any env user, issue 30).
      const api = await ctx.api({ check: true });
      const env = ctx.requireEnv();
      const [schedule, reported] = await Promise.all([
        api.config.get(env, 'schedule').then(
          (v) => Object.keys(v.schedule ?? {}),
          () => [],
        ),
        api.logs.reports(env).then(
          (r) => r.map((q) => q.name),
          () => [],
        ),
      ]);
      return [...new Set([...schedule, ...reported])];
    }
    default:
      return [];
  }
}

/** After a login: keep the environment names the user can see, for completion without a server call. */
export async function rememberEnvironments(ctx: Context, profileName: string): Promise<void> {
  try {
    const api = await ctx.api();
    const names = Object.keys(await api.environments.map('name')).sort((a, b) => a.localeCompare(b));
    const p = ctx.config.get(profileName);
    if (p && names.length) ctx.config.set(profileName, { ...p, environments: names });
  } catch {
    // Not every user may read the environment map (osctrl: super-admins only): keep the one env.
  }
}

export { TIMEOUT as COMPLETION_TIMEOUT };
