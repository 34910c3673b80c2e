import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { DataResponse, TagAction, TagBody, TagWithCount } from '../../api/index.js';

const seg = encodeURIComponent;

export const TAG = needs(S.TagWithCount, 'name');
const TAGS = Type.Array(TAG);

export const tagsApi = (http: HttpClient) => {
  /** 4.10: every tag change is one POST with the action in the path. */
  const action = (env: string, act: TagAction, body: TagBody) =>
    http.request<DataResponse>('POST', `api/v1/tags/${seg(env)}/${seg(act)}`, { body, schema: S.DataResponse });
  return {
    /** GET /api/v1/tags/{env} (contract.md 5): every tag of the env, by name, with node_count. */
    list: (env: string) => http.request<TagWithCount[]>('GET', `api/v1/tags/${seg(env)}`, { schema: TAGS, answerName: 'tags' }),
    action,
    add: (env: string, body: TagBody & { name: string }) => action(env, 'add', body),
    /** Only the fields given change (contract.md 4.10). */
    edit: (env: string, body: TagBody & { name: string }) => action(env, 'edit', body),
    remove: (env: string, name: string) => action(env, 'remove', { name }),
    /** Applies tag `name` to nodes by UUID; unknown UUIDs fail the whole request (404). */
    tag: (env: string, name: string, uuids: string[]) => action(env, 'tag', { name, uuids }),
    untag: (env: string, name: string, uuids: string[]) => action(env, 'untag', { name, uuids }),
  };
};
