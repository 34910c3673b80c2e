// Shapes shared by every endpoint (api-spec.md 2.11, contract.md section 1).
import type { Static, TSchema } from '@sinclair/typebox';
import { Type } from './type.js';
import { PAGE_SIZE_MAX } from './constants.js';
export { PAGE_SIZE_MAX };

export const ErrorCodes = [
  'bad_request',
  'invalid_json',
  'invalid_action',
  'invalid_target',
  'unauthorized',
  'token_expired',
  'mfa_required',
  'mfa_invalid',
  'challenge_invalid',
  'forbidden',
  'api_disabled',
  'csrf',
  'not_found',
  'conflict',
  'read_only',
  'rate_limited',
  'internal',
  'unavailable',
] as const;
export type ErrorCode = (typeof ErrorCodes)[number];

export const ApiErrorBody = Type.Object({ code: Type.String(), error: Type.String() }, { additionalProperties: true });
export type ApiErrorBody = Static<typeof ApiErrorBody> & Record<string, unknown>;

export const MessageResponse = Type.Object({ message: Type.String() });
export type MessageResponse = Static<typeof MessageResponse>;

export const DataResponse = Type.Object({ data: Type.String() });
export type DataResponse = Static<typeof DataResponse>;

export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object({
    items: Type.Array(item),
    page: Type.Integer(),
    page_size: Type.Integer(),
    total_items: Type.Integer(),
    total_pages: Type.Integer(),
    /** Present (false) when total_items is a lower bound: an audit search counted only so far (docs/api.md). */
    total_items_exact: Type.Optional(Type.Boolean()),
  });
export interface Page<T> {
  items: T[];
  page: number;
  page_size: number;
  total_items: number;
  total_pages: number;
  /** false: total_items (and total_pages) are lower bounds; absent: exact. */
  total_items_exact?: boolean;
}

/** Pagination rules of contract.md section 1. */
export const PAGE_SIZE_DEFAULT = 50;

/** "Never" for enrollment expiry, as osctrl writes it. */
export const NEVER = '0001-01-01T00:00:00Z';

export const Timestamp = Type.String({ description: 'RFC 3339 UTC' });
