// MFA test helpers: the demo TOTP user printed in the --dev banner, and a frozen server clock
// so TOTP codes and challenge expiry are deterministic.
import type { TestServer } from './api-server.js';
import { TOTP_STEP_SECONDS, totpCode } from '../../src/lib/totp.js';

export interface DemoMfa {
  username: string;
  secret: string;
  otpauthUri: string;
  recoveryCodes: string[];
}

/** Parses the MFA part of the dev banner (seed-auth.ts), as a user reading it would. */
export function parseMfaBanner(text: string): DemoMfa {
  const username = /MFA user:\s+(\S+)/.exec(text)?.[1];
  const secret = /TOTP secret:\s+([A-Z2-7]+)/.exec(text)?.[1];
  const otpauthUri = /otpauth URI:\s+(\S+)/.exec(text)?.[1];
  const start = text.indexOf('recovery codes:');
  const recoveryCodes = start < 0 ? [] : (text.slice(start).match(/\b[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}\b/g) ?? []);
  if (!username || !secret || !otpauthUri) throw new Error(`no MFA user in banner text:\n${text}`);
  return { username, secret, otpauthUri, recoveryCodes };
}

export function demoMfa(ts: TestServer): DemoMfa {
  return parseMfaBanner(ts.server.demo?.extra ?? '');
}

export interface Clock {
  now(): number;
  advance(ms: number): void;
  /** TOTP code of the current step, or `steps` steps away. */
  code(secret: string, steps?: number): string;
}

/** Freezes the server's clock (deps.now) in the middle of a TOTP step. */
export function freezeClock(ts: TestServer): Clock {
  const period = TOTP_STEP_SECONDS * 1000;
  let t = Math.floor(Date.now() / period) * period + period / 2;
  ts.server.deps.now = () => new Date(t);
  return {
    now: () => t,
    advance: (ms) => void (t += ms),
    code: (secret, steps = 0) => totpCode(secret, t + steps * period),
  };
}
