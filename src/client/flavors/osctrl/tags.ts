import { MessageResponse, TagTypes, type TagWithCount } from '../../../api/index.js';
import { ApiError, CliError, ExitCode } from '../../../errors.js';
import { checkAnswer } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg, refuse } from './shapes.js';

export function tagsResource(s: OsctrlSession) {
  const { http, base, tagList, currentTag, envNames, readNodes, nodeCounts } = s;
  return {
    ...base.tags,
    /**
     * osctrl sends no node counts, and its API says nowhere which nodes carry a tag. Two kinds of
     * tag are on nodes by rule: osctrl-tls tags every node it enrolls with its environment's name
     * (the env tag, type 0) and its platform (an auto tag, type 1), so those are counted from the
     * node list. Any other tag keeps no count (blank), never a made-up one.
     */
    list: async (env: string) => {
      const list = await tagList(env);
      const envName = (await envNames()).find((x) => x.uuid === env || x.name === env)?.name ?? env;
      const counted = (t: TagWithCount) => (t.tag_type === 0 && t.name === envName) || (t.auto_tag && t.tag_type === 1);
      if (!list.some(counted)) return list;
      await readNodes(env);
      return list.map((t) =>
        counted(t) ? { ...t, node_count: t.tag_type === 0 ? nodeCounts.total : (nodeCounts.perPlatform.get(t.name) ?? 0) } : t,
      );
    },
    // osctrl stores type 0 (env) when tagtype is omitted; this API's default is `tag`.
    add: (env: string, body: Parameters<FleetResources['tags']['add']>[1]) =>
      base.tags.add(env, { ...body, tagtype: body.tagtype ?? TagTypes.tag }),
    // osctrl compares an omitted tagtype (0) with the stored one and changes it: send the current type.
    edit: async (env: string, body: Parameters<FleetResources['tags']['edit']>[1]) => {
      if (body.tagtype !== undefined) return base.tags.edit(env, body);
      const cur = await currentTag(env, body.name);
      if (!cur) throw new ApiError(404, 'not_found', `tag "${body.name}" not found`);
      return base.tags.edit(env, { ...body, tagtype: cur.tag_type });
    },
    /**
     * osctrl tags one node per request and creates the tag when missing (so it is checked first).
     * A node that already has the tag answers 500 "error tagging node": this API counts that as
     * done, as its own server does, and says which nodes they were; every node is tried.
     */
    tag: async (env: string, name: string, uuids: string[]) => {
      const cur = await currentTag(env, name);
      if (!cur) throw new ApiError(404, 'not_found', `tag "${name}" not found`);
      const already: string[] = [];
      for (const uuid of uuids) {
        try {
          checkAnswer(
            MessageResponse,
            await http.request<unknown>('POST', `api/v1/nodes/${seg(env)}/tag`, {
              body: { uuid, tag: name, type: cur.tag_type, custom: cur.custom_tag },
            }),
          );
        } catch (e) {
          if (e instanceof ApiError && e.status === 500 && /error tagging node/.test(e.message)) already.push(uuid);
          else
            throw new CliError(
              `${(e as Error).message}: tag ${name} was applied to ${uuids.indexOf(uuid)} of ${uuids.length} node(s) before ${uuid}`,
              e instanceof ApiError ? ExitCode.error : ExitCode.unavailable,
            );
        }
      }
      if (already.length) {
        http.opts.warn?.(
          `osctrl-tagged-${name}`,
          `${already.length} of ${uuids.length} node(s) already had tag ${name}, or osctrl could not tag them (it answers 500 "error tagging node" for both): ${already.join(', ')}`,
        );
      }
      return { data: `tag ${name} applied to ${uuids.length - already.length} node(s)` };
    },
    untag: () => refuse('untag'),
  };
}
