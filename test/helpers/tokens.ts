// Tokens for permission tests: one the server signed but that has expired, and one with a
// signature the server never made. Both are well-formed JWTs, so they reach the signature and
// expiry checks rather than failing as malformed.
import { randomBytes, randomUUID } from 'node:crypto';
import { signJwt, type JwtClaims } from '../../src/server/lib/crypto.js';
import type { TestServer } from './api-server.js';

/** Signed with the server's own secret, expired an hour ago (401 token_expired). */
export function expiredToken(ts: TestServer, username: string): string {
  const now = Math.floor(ts.server.deps.now().getTime() / 1000);
  const { jwtSecret, issuer } = ts.server.deps.config;
  return signJwt({ sub: username, iss: issuer, iat: now - 2 * 3600, exp: now - 3600, jti: randomUUID() }, jwtSecret);
}

/** Valid for an hour but signed with a random secret (401 unauthorized). */
export function forgedToken(username = 'admin'): string {
  const now = Math.floor(Date.now() / 1000);
  return signJwt({ sub: username, iss: 'fleetctl', iat: now, exp: now + 3600, jti: randomUUID() }, randomBytes(32));
}

/** The claims of a JWT, unverified. */
export function jwtClaims(token: string): JwtClaims {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as JwtClaims;
}
