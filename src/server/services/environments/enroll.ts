// Enrollment of an environment: the actions of 4.8 (expiry, secret rotation, certificate and
// packages) and the helper texts of 4.9.
import { X509Certificate } from 'node:crypto';
import type { Updateable } from 'kysely';
import { atomically } from '../../store/db.js';
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow, EnvironmentsTable } from '../../store/schema.js';
import { EnrollActionAliases, EnrollActions, EnrollTargets, LogTypes, NEVER, type EnrollBody } from '../../../api/index.js';
import { badRequest, invalidAction, invalidTarget } from '../../errors.js';
import { randomHex } from '../../lib/crypto.js';
import { writeAudit } from '../audit/audit.js';
import { booleanSetting } from './settings-values.js';
import { enrollText } from './enroll-scripts.js';
import { storedPem } from './agent-identity.js';

const ALL_ACTIONS = [...EnrollActions, ...EnrollActionAliases] as const;
const DAY_MS = 24 * 3600_000;

type BodyField = keyof EnrollBody;
/** Body field -> environment column. */
const FIELD_COLUMN: Record<BodyField, 'certificate' | 'deb_package' | 'pkg_package' | 'msi_package' | 'rpm_package'> = {
  certificate: 'certificate',
  url_deb_pkg: 'deb_package',
  url_mac_pkg: 'pkg_package',
  url_msi_pkg: 'msi_package',
  url_rpm_pkg: 'rpm_package',
};
const BODY_FIELDS = Object.keys(FIELD_COLUMN) as BodyField[];
/** The osctrl action names, each setting exactly one field. */
const ALIAS_FIELD: Record<(typeof EnrollActionAliases)[number], BodyField> = {
  set_pkg: 'url_mac_pkg',
  set_msi: 'url_msi_pkg',
  set_deb: 'url_deb_pkg',
  set_rpm: 'url_rpm_pkg',
  cert: 'certificate',
};

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----/g;

/**
 * A certificate (or chain) as PEM: only CERTIFICATE blocks, each parsing as X.509. A private key
 * pasted along with the certificate is refused: it would end up in every enroll script.
 * Empty clears the certificate.
 */
export function checkCertificate(text: string): string {
  const pem = text.replace(/\r\n/g, '\n').trim();
  if (pem === '') return '';
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  if (blocks.length === 0) throw badRequest('certificate must be PEM text (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)');
  if (pem.replace(PEM_BLOCK, '').trim() !== '')
    throw badRequest('certificate has text outside its PEM blocks; send only the PEM certificate(s)');
  for (const [block, label] of blocks) {
    if (label !== 'CERTIFICATE') throw badRequest(`certificate must contain only CERTIFICATE blocks, found a ${label} block`);
    try {
      new X509Certificate(block);
    } catch {
      throw badRequest('certificate does not parse as an X.509 certificate');
    }
  }
  return pem + '\n';
}

/** A package is an https:// URL or a bare file name (no directories); empty clears it. */
export function checkPackage(field: string, value: string): string {
  const v = value.trim();
  if (v === '') return '';
  const bad = () => badRequest(`${field} must be an https:// URL or a bare file name, got "${value}"`);
  if (v.length > 2048 || /[\s"'`\\]/.test(v)) throw bad();
  if (/^https:\/\//i.test(v)) {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      throw bad();
    }
    if (url.protocol !== 'https:' || url.hostname === '') throw bad();
    return v;
  }
  if (/^[A-Za-z0-9][A-Za-z0-9._+~-]*$/.test(v) && v.length <= 255) return v;
  throw bad();
}

function checkField(field: BodyField, value: string): string {
  return field === 'certificate' ? checkCertificate(value) : checkPackage(field, value);
}

/** 4.8: returns the success message. */
export async function enrollAction(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  action: string,
  body: EnrollBody,
  sourceIp: string,
): Promise<string> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    if (!(ALL_ACTIONS as readonly string[]).includes(action)) throw invalidAction(action, ALL_ACTIONS);
    const now = deps.now();
    const plus24h = new Date(now.getTime() + DAY_MS).toISOString();
    let changes: Updateable<EnvironmentsTable>;
    let message: string;
    let auditLine: string;
    switch (action) {
      case 'extend':
        changes = { enroll_expire: plus24h };
        message = auditLine = `enrollment of ${env.name} extended until ${plus24h}`;
        break;
      case 'expire':
        changes = { enroll_expire: now.toISOString() };
        message = auditLine = `enrollment of ${env.name} expired`;
        break;
      case 'notexpire':
        changes = { enroll_expire: NEVER };
        message = auditLine = `enrollment of ${env.name} set to never expire`;
        break;
      case 'rotate':
        changes = { secret: randomHex(24), enroll_secret_path: randomHex(16), enroll_expire: plus24h };
        message = auditLine = `enroll secret of ${env.name} rotated; enrollment expires ${plus24h}`;
        break;
      default: {
        // update, or one of osctrl's single-field names
        const fields =
          action === 'update' ? BODY_FIELDS.filter((f) => body[f] !== undefined) : [ALIAS_FIELD[action as keyof typeof ALIAS_FIELD]];
        if (fields.length === 0) throw badRequest(`nothing to update: give one or more of ${BODY_FIELDS.join(', ')}`);
        changes = {};
        for (const f of fields) {
          const v = body[f];
          if (v === undefined) throw badRequest(`${action} needs ${f}`);
          changes[FIELD_COLUMN[f]] = checkField(f, v);
        }
        // Issue 27: a certificate given is this environment's own (kept across the server's
        // renewals); an empty one makes it follow the server's trust anchor again.
        if (changes.certificate !== undefined) {
          const follow = changes.certificate === '' && deps.agentIdentity !== undefined;
          if (follow) changes.certificate = storedPem(deps.agentIdentity!.certificate);
          changes.certificate_pinned = follow ? 0 : 1;
        }
        message = `enrollment of ${env.name} updated: ${fields.join(', ')}`;
        auditLine = `enrollment of ${env.name} updated: ${fields.map((f) => (f === 'certificate' ? f : `${f}=${changes[FIELD_COLUMN[f]]}`)).join(', ')}`;
      }
    }
    await deps.db
      .updateTable('environments')
      .set({ ...changes, updated_at: now.toISOString() })
      .where('id', '=', env.id)
      .execute();
    await writeAudit(deps, { line: auditLine, logType: LogTypes.environment, username: caller.user.username, sourceIp, env });
    return message;
  });
}

/** 4.9: the text of one target. */
export async function enrollRead(deps: Deps, env: EnvironmentRow, target: string): Promise<string> {
  if (!(EnrollTargets as readonly string[]).includes(target)) throw invalidTarget(target, EnrollTargets);
  const expires = await booleanSetting(deps, 'tls', 'oneliner_expiration', env.id, true);
  return enrollText(env, target, { now: deps.now(), expires });
}
