// An environment's osquery configuration (issue 22): options, schedule, packs, decorators and
// atc, read whole or by part, replaced by part, and the configuration its agents receive. The
// parts' shapes and rules live in src/lib/osquery-config.ts (shared by server and CLI); these
// schemas keep each part an open JSON object so nothing an agent would get is dropped in transit.
import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Timestamp } from './common.js';

export const CONFIG_PARTS = ['options', 'schedule', 'packs', 'decorators', 'atc'] as const;
export type ConfigPart = (typeof CONFIG_PARTS)[number];

export type OptionValue = string | number | boolean;
export interface ScheduledQuery {
  query: string;
  interval: number;
  platform?: string;
  version?: string;
  shard?: number;
  snapshot?: boolean;
  removed?: boolean;
  denylist?: boolean;
  description?: string;
  value?: string;
}
export interface Pack {
  queries: Record<string, ScheduledQuery>;
  discovery?: string[];
  platform?: string;
  version?: string;
  shard?: number;
  oncall?: string;
}
export interface Decorators {
  load?: string[];
  always?: string[];
  interval?: Record<string, string[]>;
}
export interface AtcTable {
  query: string;
  path: string;
  columns: string[];
  platform?: string;
}
export interface OsqueryConfigParts {
  options: Record<string, OptionValue>;
  schedule: Record<string, ScheduledQuery>;
  /** A string is a local pack: a path (or glob) of pack files on the agent. */
  packs: Record<string, Pack | string>;
  decorators: Decorators;
  atc: Record<string, AtcTable>;
}

// A part is any JSON object here: its rules are in src/lib/osquery-config.ts, checked on the way in.
const Part = Type.Unsafe<object>({ type: 'object', additionalProperties: true });

/** GET /api/v1/environments/{env}/config (all parts) and .../config/{part} (that part only). */
export const OsqueryConfigView = Type.Object({
  environment: Type.String(),
  /** The hash of the configuration agents receive (agent-config); changes with any part. */
  hash: Type.String(),
  updated_at: Timestamp,
  options: Type.Optional(Part),
  schedule: Type.Optional(Part),
  packs: Type.Optional(Part),
  decorators: Type.Optional(Part),
  atc: Type.Optional(Part),
  /** PATCH only: the parts whose content changed (empty: nothing to do). */
  changed: Type.Optional(Type.Array(Type.String())),
  /** PATCH only: true when ?dry_run=true (validated, nothing stored). */
  dry_run: Type.Optional(Type.Boolean()),
});
export type OsqueryConfigView = Partial<OsqueryConfigParts> & {
  environment: string;
  hash: string;
  updated_at: string;
  changed?: string[];
  dry_run?: boolean;
};

/** PATCH /api/v1/environments/{env}/config: each part given replaces that part whole. */
export const OsqueryConfigPatch = Type.Object(
  {
    options: Type.Optional(Type.Unknown()),
    schedule: Type.Optional(Type.Unknown()),
    packs: Type.Optional(Type.Unknown()),
    decorators: Type.Optional(Type.Unknown()),
    atc: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
export type OsqueryConfigPatch = Partial<Record<keyof OsqueryConfigParts, unknown>>;

export const OsqueryConfigQuery = Type.Object({ dry_run: Type.Optional(Type.String()) });

/** GET /api/v1/environments/{env}/agent-config: exactly what the agent door answers, and its hash. */
export const AgentConfigView = Type.Object({
  environment: Type.String(),
  hash: Type.String(),
  config: Type.Object({
    options: Part,
    schedule: Part,
    packs: Part,
    decorators: Part,
    auto_table_construction: Part,
  }),
});
export type AgentConfigView = Static<typeof AgentConfigView>;
