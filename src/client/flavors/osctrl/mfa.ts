import type { OsctrlSession } from './session.js';
import { refuse } from './shapes.js';

export function mfaResource(_s: OsctrlSession) {
  return {
    totpBegin: () => refuse('mfa'),
    totpConfirm: () => refuse('mfa'),
    totpDisable: () => refuse('mfa'),
    recoveryCodesRegenerate: () => refuse('mfa'),
    webauthnList: () => refuse('mfa'),
    webauthnRemove: () => refuse('mfa'),
  };
}
