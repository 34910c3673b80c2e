import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { AccessLevels } from './constants.js';
export { AccessLevels };

export type AccessLevel = (typeof AccessLevels)[number];

export const UserEnvAccess = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  uuid: Type.String(),
  user: Type.Boolean(),
  query: Type.Boolean(),
  carve: Type.Boolean(),
  admin: Type.Boolean(),
});
export type UserEnvAccess = Static<typeof UserEnvAccess>;

/** GET /api/v1/users and /users/me items (contract.md 5): no secrets. */
export const User = Type.Object({
  username: Type.String(),
  fullname: Type.String(),
  email: Type.String(),
  admin: Type.Boolean(),
  service: Type.Boolean(),
  api: Type.Boolean(),
  environments: Type.Array(UserEnvAccess),
  mfa: Type.Object({
    totp: Type.Boolean(),
    webauthn: Type.Integer(),
    /** Unused recovery codes (optional: servers of other flavours do not report it). */
    recovery_codes: Type.Optional(Type.Integer()),
  }),
  created_at: Type.String(),
  last_login_at: Type.String(),
});
export type User = Static<typeof User>;

export const UserActions = ['add', 'edit', 'remove'] as const;
export type UserAction = (typeof UserActions)[number];

/** 4.5 body */
export const UserBody = Type.Object({
  username: Type.Optional(Type.String()),
  fullname: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  environments: Type.Optional(Type.Array(Type.String())),
  admin: Type.Optional(Type.Boolean()),
  not_admin: Type.Optional(Type.Boolean()),
  service: Type.Optional(Type.Boolean()),
  not_service: Type.Optional(Type.Boolean()),
  api: Type.Optional(Type.Boolean()),
  admin_access: Type.Optional(Type.Boolean()),
  user_access: Type.Optional(Type.Boolean()),
  query_access: Type.Optional(Type.Boolean()),
  carve_access: Type.Optional(Type.Boolean()),
});
export type UserBody = Static<typeof UserBody>;
