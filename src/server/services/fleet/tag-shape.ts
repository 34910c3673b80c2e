import type { Tag } from '../../../api/index.js';
import type { TagRow } from '../../store/schema.js';

export function toTag(r: TagRow): Tag {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    color: r.color,
    icon: r.icon,
    environment_id: r.environment_id,
    tag_type: r.tag_type,
    custom_tag: r.custom_tag,
    auto_tag: !!r.auto_tag,
    cohort: !!r.cohort,
    created_by: r.created_by,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
