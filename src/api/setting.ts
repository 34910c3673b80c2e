import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { SettingServices } from './constants.js';
export { SettingServices };

/** api-spec.md 2.3 (camelCase names as in the spec) */
export const Setting = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  service: Type.String(),
  type: Type.String(),
  info: Type.String(),
  environmentID: Type.Integer(),
  boolean: Type.Boolean(),
  integer: Type.Integer(),
  string: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  deletedAt: Type.Object({ time: Type.Union([Type.String(), Type.Null()]), valid: Type.Boolean() }),
});
export type Setting = Static<typeof Setting>;

export type SettingService = (typeof SettingServices)[number];
export const SettingTypes = ['boolean', 'integer', 'string'] as const;
export type SettingType = (typeof SettingTypes)[number];

/** 4.15 body */
export const SettingUpdateBody = Type.Object({
  boolean: Type.Optional(Type.Boolean()),
  integer: Type.Optional(Type.Integer()),
  string: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
});
export type SettingUpdateBody = Static<typeof SettingUpdateBody>;
