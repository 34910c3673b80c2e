// Which server fleetctl talks to. Everything that differs between flavours lives under
// src/client/flavors/; commands only ever see the FleetApi of src/client/index.ts.
import { CliError, ExitCode, UsageError } from '../../errors.js';
import type { HttpClient } from '../http.js';

export const ServerFlavors = ['fleet', 'osctrl'] as const;
export type ServerFlavor = (typeof ServerFlavors)[number];

/** What refusals name: the version the osctrl flavour was written and checked against. */
export const OSCTRL_VERSION = 'osctrl 0.5.4';

export function parseFlavor(v: string, from: string): ServerFlavor {
  const f = v.trim().toLowerCase();
  if ((ServerFlavors as readonly string[]).includes(f)) return f as ServerFlavor;
  throw new UsageError(`invalid ${from} "${v}": use ${ServerFlavors.join(' or ')}`);
}

/** Features a command may check for before it sends anything (FleetApi.need). */
export const FEATURE_NAMES = {
  mfa: 'MFA (TOTP and WebAuthn security keys)',
  'log-sinks': 'log sinks',
  untag: 'removing a tag from nodes (untag)',
  'carve-archive': 'carve archive',
  'env-settings': 'per-environment settings',
  'audit-search': 'audit search (-q)',
  'node-tag-filter': 'listing nodes by tag (--tag)',
  'node-health-filter': 'listing nodes by risk or health (--risk, --health)',
  'derived-targets': 'targeting nodes by status, health or risk (osctrl would ignore the list and target every node)',
  'audit-show': 'reading one audit entry',
  'node-config-filter': 'listing nodes by configuration (--config-stale)',
  'enroll-window': 'an enrollment window of any length (--enroll-window)',
  'detail-refresh': 'refreshing host details at an interval (--detail-refresh)',
  'agent-host-follow': "an agent host that follows the server's --agent-url (--follow-server)",
  'carve-delete':
    "deleting a carve's files (osctrl's carve delete only marks the carve deleted: its files and blocks stay, and it still serves the archive)",
} as const;
export type Feature = keyof typeof FEATURE_NAMES;

/** What each flavour lacks. */
const MISSING: Record<ServerFlavor, ReadonlySet<Feature>> = {
  fleet: new Set(),
  osctrl: new Set(Object.keys(FEATURE_NAMES) as Feature[]),
};

/** How a flavour behaves where a command must say something else (not a missing feature). */
export interface Traits {
  /** A password change ends the user's other sessions (osctrl 0.5.4: every token stays valid until it expires). */
  passwordChangeEndsSessions: boolean;
  /**
   * An environment's enroll expiry stops agents from enrolling. osctrl 0.5.4: it ends only the
   * enroll.sh/enroll.ps1 links; osctrl-tls enrolls any agent with the secret while accept_enrolls is on.
   */
  enrollExpiryStopsAgents: boolean;
  /** A deleted carve's files are gone (osctrl 0.5.4 never deletes them, and serves a carve it marked deleted). */
  carveDeleteRemovesFiles: boolean;
}
const TRAITS: Record<ServerFlavor, Traits> = {
  fleet: { passwordChangeEndsSessions: true, enrollExpiryStopsAgents: true, carveDeleteRemovesFiles: true },
  osctrl: { passwordChangeEndsSessions: false, enrollExpiryStopsAgents: false, carveDeleteRemovesFiles: false },
};
export const traits = (flavor: ServerFlavor): Traits => TRAITS[flavor];

/** Throws NotSupportedError when the flavour lacks the feature; commands call it before any request. */
export function need(flavor: ServerFlavor, feature: Feature): void {
  if (MISSING[flavor].has(feature)) throw new NotSupportedError(FEATURE_NAMES[feature]);
}

/** Refused before any request: the server has no such feature. Exit 8. */
export class NotSupportedError extends CliError {
  constructor(feature: string, hint?: string) {
    super(`${feature}: not supported by this server (${OSCTRL_VERSION} has no such feature)`, ExitCode.unsupported, hint);
  }
}

/**
 * One anonymous GET. osctrl answers `GET /api/v1/auth/methods` without a token
 * (`{"methods":[{"type":"password","loginUrl":"/api/v1/login"},…]}`); the reference server has no
 * such route and answers 404 `{code:"not_found"}`. No credentials are sent, nothing is written on
 * either server, and it costs one round trip at login only (the result is kept in the profile).
 */
export async function detectFlavor(http: HttpClient): Promise<ServerFlavor> {
  try {
    const body = await http.request<unknown>('GET', 'api/v1/auth/methods');
    const methods = (body as { methods?: unknown })?.methods;
    return Array.isArray(methods) && methods.some((m) => (m as { loginUrl?: unknown })?.loginUrl === '/api/v1/login') ? 'osctrl' : 'fleet';
  } catch (e) {
    if (e instanceof CliError) return 'fleet';
    if ((e as { status?: number }).status !== undefined) return 'fleet';
    throw e;
  }
}
