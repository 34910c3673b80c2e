// osctrl's one-liners: GET /{env}/{enroll_secret_path}/enroll.sh (or .ps1) and
// /{env}/{remove_secret_path}/remove.sh, each while its secret path has not expired
// (the same expiry the scripts print). Anything else is a plain 404.
import type { FastifyInstance } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import type { Deps } from '../context.js';
import { enrollRead } from '../services/environments/enroll.js';
import type { EnvironmentRow } from '../store/schema.js';
import { NEVER } from '../../api/index.js';

/** Constant-time equality of two texts; compares their bytes (a non-ASCII text of the right length in characters threw). */
const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

async function findEnv(deps: Deps, ref: string): Promise<EnvironmentRow | undefined> {
  const byUuid = await deps.db.selectFrom('environments').selectAll().where('uuid', '=', ref.toLowerCase()).executeTakeFirst();
  return byUuid ?? (await deps.db.selectFrom('environments').selectAll().where('name', '=', ref).executeTakeFirst());
}

export function registerScriptRoute(app: FastifyInstance, deps: Deps): void {
  app.get<{ Params: { env: string; secret: string; script: string } }>('/:env/:secret/:script', async (req, reply) => {
    const env = await findEnv(deps, req.params.env);
    const { secret, script } = req.params;
    const kind = /^(enroll|remove)\.(sh|ps1)$/.exec(script)?.[1];
    const path = kind === 'enroll' ? env?.enroll_secret_path : env?.remove_secret_path;
    const expire = kind === 'enroll' ? env?.enroll_expire : env?.remove_expire;
    const expired = !!expire && expire !== NEVER && new Date(expire) <= deps.now();
    if (!env || !kind || !path || !sameText(secret, path) || expired) return reply.status(404).type('text/plain').send('not found\n');
    return reply.type('text/plain; charset=utf-8').send(await enrollRead(deps, env, script));
  });
}
