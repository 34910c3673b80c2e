// Tags of an environment (4.10 actions, and the list of contract.md 5).
import { randomInt } from 'node:crypto';
import type { Updateable } from 'kysely';
import { inTransaction } from '../../store/db.js';
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow, TagRow, TagsTable } from '../../store/schema.js';
import { LogTypes, TagActions, TagTypes, type TagBody, type TagWithCount } from '../../../api/index.js';
import { badRequest, conflict, HttpError, invalidAction, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { toTag } from './tag-shape.js';

export const DEFAULT_TAG_ICON = 'fas fa-tag';
/** Most node UUIDs one tag/untag request may name: keeps a request to one bounded transaction. */
export const MAX_TAG_UUIDS = 10_000;
const NAME_MAX = 255;
const COLOR = /^#[0-9a-fA-F]{6}$/;

const TYPE_NAMES = new Map<number, string>(Object.entries(TagTypes).map(([name, n]) => [n, name]));
const TYPE_LIST = [...TYPE_NAMES].map(([n, name]) => `${n} (${name})`).join(', ');

export async function listTags(deps: Deps, env: EnvironmentRow): Promise<TagWithCount[]> {
  const rows = await deps.db
    .selectFrom('tags')
    .leftJoin('node_tags', 'node_tags.tag_id', 'tags.id')
    .selectAll('tags')
    .select((eb) => eb.fn.count<number>('node_tags.node_id').as('node_count'))
    .where('tags.environment_id', '=', env.id)
    .groupBy('tags.id')
    .orderBy('tags.name')
    .execute();
  return rows.map((r) => ({ ...toTag(r as TagRow), node_count: Number(r.node_count) }));
}

const randomColor = () => `#${randomInt(0, 0x1000000).toString(16).padStart(6, '0')}`;

function tagName(body: TagBody): string {
  const name = body.name?.trim() ?? '';
  if (name === '') throw badRequest('name is required');
  if (name.length > NAME_MAX) throw badRequest(`name is longer than ${NAME_MAX} characters`);
  // eslint-disable-next-line no-control-regex -- control characters are what this looks for
  if (/[\u0000-\u001f\u007f]/.test(name)) throw badRequest('name must not contain control characters');
  return name;
}

function checkColor(color: string): string {
  if (!COLOR.test(color)) throw badRequest(`color must be #rrggbb (e.g. #5bc0de), got "${color}"`);
  return color.toLowerCase();
}

function checkType(t: number): number {
  if (!TYPE_NAMES.has(t)) throw badRequest(`tagtype must be one of ${TYPE_LIST}, got ${t}`);
  return t;
}

/** custom_tag: the type's name, or the custom text for type 4 (which then must be given). */
function customTag(type: number, custom: string | undefined): string {
  if (type === TagTypes.custom) {
    const text = custom?.trim() ?? '';
    if (text === '') throw badRequest('custom is required for tag type 4 (custom)');
    return text;
  }
  if (custom !== undefined && custom !== '')
    throw badRequest(`custom only applies to tag type 4 (custom); this tag is type ${type} (${TYPE_NAMES.get(type)})`);
  return TYPE_NAMES.get(type)!;
}

async function findTag(deps: Deps, env: EnvironmentRow, name: string): Promise<TagRow> {
  const tag = await deps.db.selectFrom('tags').selectAll().where('environment_id', '=', env.id).where('name', '=', name).executeTakeFirst();
  if (!tag) throw notFound(`tag "${name}" not found in environment ${env.name}`);
  return tag;
}

/** The body's `env`, when given, must be the path's environment (name or UUID). */
function checkBodyEnv(env: EnvironmentRow, ref: string | undefined): void {
  if (ref === undefined || ref === '') return;
  if (ref !== env.name && ref.toLowerCase() !== env.uuid.toLowerCase()) {
    throw badRequest(`body env "${ref}" does not match the environment in the path (${env.name})`);
  }
}

async function addTag(deps: Deps, caller: Caller, env: EnvironmentRow, body: TagBody): Promise<string> {
  const name = tagName(body);
  const type = checkType(body.tagtype ?? TagTypes.tag);
  const custom = customTag(type, body.custom);
  const color = body.color === undefined || body.color === '' ? randomColor() : checkColor(body.color);
  const icon = body.icon?.trim() ? body.icon.trim() : DEFAULT_TAG_ICON;
  const exists = await deps.db
    .selectFrom('tags')
    .select('id')
    .where('environment_id', '=', env.id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (exists) throw conflict(`tag "${name}" already exists in environment ${env.name}`);
  const ts = deps.now().toISOString();
  try {
    await deps.db
      .insertInto('tags')
      .values({
        name,
        description: body.description ?? '',
        color,
        icon,
        environment_id: env.id,
        tag_type: type,
        custom_tag: custom,
        auto_tag: 0,
        cohort: 0,
        created_by: caller.user.username,
        created_at: ts,
        updated_at: ts,
      })
      .execute();
  } catch (e) {
    // Two concurrent adds of one name: the unique index decides, the loser gets the same 409.
    if (/UNIQUE|duplicate key/i.test((e as Error).message)) throw conflict(`tag "${name}" already exists in environment ${env.name}`);
    throw e;
  }
  return `tag ${name} added to ${env.name}`;
}

async function editTag(deps: Deps, env: EnvironmentRow, body: TagBody): Promise<{ message: string; fields: string[] }> {
  const name = tagName(body);
  const tag = await findTag(deps, env, name);
  const changes: Updateable<TagsTable> = {};
  if (body.description !== undefined) changes.description = body.description;
  if (body.color !== undefined) changes.color = checkColor(body.color);
  if (body.icon !== undefined) {
    if (body.icon.trim() === '') throw badRequest('icon must not be empty');
    changes.icon = body.icon.trim();
  }
  if (body.tagtype !== undefined || body.custom !== undefined) {
    const type = body.tagtype === undefined ? tag.tag_type : checkType(body.tagtype);
    // Staying a custom tag keeps its text unless a new one is given.
    const custom = body.custom ?? (type === TagTypes.custom && tag.tag_type === TagTypes.custom ? tag.custom_tag : undefined);
    changes.tag_type = type;
    changes.custom_tag = customTag(type, custom);
  }
  const fields = Object.keys(changes);
  if (fields.length === 0) throw badRequest('nothing to change: give description, color, icon, tagtype or custom');
  await deps.db
    .updateTable('tags')
    .set({ ...changes, updated_at: deps.now().toISOString() })
    .where('id', '=', tag.id)
    .execute();
  return { message: `tag ${name} updated in ${env.name}`, fields };
}

async function removeTag(deps: Deps, env: EnvironmentRow, body: TagBody): Promise<{ message: string; untagged: number }> {
  const tag = await findTag(deps, env, tagName(body));
  const untagged = await inTransaction(deps.db, async (trx) => {
    const r = await trx.deleteFrom('node_tags').where('tag_id', '=', tag.id).executeTakeFirst();
    await trx.deleteFrom('tags').where('id', '=', tag.id).execute();
    return Number(r.numDeletedRows);
  });
  return { message: `tag ${tag.name} removed from ${env.name} (and from ${untagged} node${untagged === 1 ? '' : 's'})`, untagged };
}

function nodeUuids(body: TagBody): string[] {
  if (body.uuids === undefined || body.uuids.length === 0) throw badRequest('uuids is required: an array of node UUIDs');
  if (body.uuids.length > MAX_TAG_UUIDS) throw badRequest(`at most ${MAX_TAG_UUIDS} uuids per request`);
  return [...new Set(body.uuids.map((u) => u.trim().toLowerCase()))];
}

/** tag/untag: every UUID must be a node of this environment, else nothing is applied. */
async function applyTag(deps: Deps, env: EnvironmentRow, body: TagBody, untag: boolean): Promise<{ message: string; count: number }> {
  const tag = await findTag(deps, env, tagName(body));
  const uuids = nodeUuids(body);
  const count = await inTransaction(deps.db, async (trx) => {
    const found = new Map<string, number>();
    for (let i = 0; i < uuids.length; i += 250) {
      const chunk = uuids.slice(i, i + 250);
      // Both spellings, as node lookups do elsewhere, so the uuid index is used.
      const rows = await trx
        .selectFrom('nodes')
        .select(['id', 'uuid'])
        .where('environment_id', '=', env.id)
        .where('uuid', 'in', [...chunk, ...chunk.map((u) => u.toUpperCase())])
        .execute();
      for (const r of rows) found.set(r.uuid.toLowerCase(), r.id);
    }
    const unknown = uuids.filter((u) => !found.has(u));
    if (unknown.length > 0) {
      throw new HttpError(
        404,
        'not_found',
        `${unknown.length} node${unknown.length === 1 ? '' : 's'} not found in environment ${env.name}: ${unknown.slice(0, 20).join(', ')}${unknown.length > 20 ? ', ...' : ''}; nothing was changed`,
        { uuids: unknown },
      );
    }
    const ids = [...found.values()];
    let changed = 0;
    for (let i = 0; i < ids.length; i += 400) {
      const chunk = ids.slice(i, i + 400);
      if (untag) {
        const r = await trx.deleteFrom('node_tags').where('tag_id', '=', tag.id).where('node_id', 'in', chunk).executeTakeFirst();
        changed += Number(r.numDeletedRows);
      } else {
        const r = await trx
          .insertInto('node_tags')
          .values(chunk.map((node_id) => ({ node_id, tag_id: tag.id })))
          .onConflict((oc) => oc.columns(['node_id', 'tag_id']).doNothing())
          .executeTakeFirst();
        changed += Number(r.numInsertedOrUpdatedRows ?? 0);
      }
    }
    return changed;
  });
  const n = uuids.length;
  const nodes = `${n} node${n === 1 ? '' : 's'}`;
  return {
    message: untag
      ? `tag ${tag.name} removed from ${nodes} (${count} had it)`
      : `tag ${tag.name} applied to ${nodes} (${count} newly tagged)`,
    count,
  };
}

/** 4.10: returns the success text for `{data}`. */
export async function tagAction(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  action: string,
  body: TagBody,
  sourceIp: string,
): Promise<string> {
  if (!(TagActions as readonly string[]).includes(action)) throw invalidAction(action, TagActions);
  checkBodyEnv(env, body.env);
  // The change and its audit row commit together: a crash between them cannot keep one alone.
  return inTransaction(deps.db, async (trx) => applyTagAction({ ...deps, db: trx }, caller, env, action, body, sourceIp));
}

async function applyTagAction(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  action: string,
  body: TagBody,
  sourceIp: string,
): Promise<string> {
  let message: string;
  let line: string;
  switch (action) {
    case 'add':
      message = line = await addTag(deps, caller, env, body);
      break;
    case 'edit': {
      const r = await editTag(deps, env, body);
      message = r.message;
      line = `${r.message}: ${r.fields.join(', ')}`;
      break;
    }
    case 'remove':
      message = line = (await removeTag(deps, env, body)).message;
      break;
    default: {
      const r = await applyTag(deps, env, body, action === 'untag');
      message = line = r.message;
    }
  }
  await writeAudit(deps, { line, logType: LogTypes.tag, username: caller.user.username, sourceIp, env });
  return message;
}
