import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Timestamp } from './common.js';
import { TagTypes } from './constants.js';
export { TagTypes };

/** api-spec.md 2.5 */
export const Tag = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Type.String(),
  color: Type.String(),
  icon: Type.String(),
  environment_id: Type.Integer(),
  tag_type: Type.Integer(),
  custom_tag: Type.String(),
  auto_tag: Type.Boolean(),
  cohort: Type.Boolean(),
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Tag = Static<typeof Tag>;

/** GET /api/v1/tags/{env} items (contract.md 5) */
export const TagWithCount = Type.Object({ ...Tag.properties, node_count: Type.Integer() });
export type TagWithCount = Static<typeof TagWithCount>;

export const TagActions = ['add', 'edit', 'remove', 'tag', 'untag'] as const;
export type TagAction = (typeof TagActions)[number];

/** 4.10 body */
export const TagBody = Type.Object({
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  color: Type.Optional(Type.String()),
  icon: Type.Optional(Type.String()),
  custom: Type.Optional(Type.String()),
  env: Type.Optional(Type.String()),
  tagtype: Type.Optional(Type.Integer()),
  uuids: Type.Optional(Type.Array(Type.String())),
});
export type TagBody = Static<typeof TagBody>;
