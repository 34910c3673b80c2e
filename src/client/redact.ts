// What --debug may print: secrets in headers and JSON bodies are replaced.
// The enroll and remove secret paths too: with them, the enroll.sh/remove.sh URLs hand out the secret.
const SECRET_KEYS =
  /^(password|current_password|new_password|token|csrf_token|secret|enroll_secret_path|remove_secret_path|code|recovery_codes|node_key|challenge|otpauth_uri)$/i;
const SECRET_HEADERS = /^(authorization|x-csrf-token|cookie|set-cookie)$/i;

export function redactHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k] = SECRET_HEADERS.test(k) ? '[redacted]' : Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** Redacts secret fields at any depth. Error bodies keep their `code` (it is not a secret there). */
export function redactJson(value: unknown, isErrorBody = false): unknown {
  if (Array.isArray(value)) return value.map((v) => redactJson(v));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (isErrorBody && k === 'code') out[k] = v;
      else out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redactJson(v);
    }
    return out;
  }
  return value;
}

/** Redacts a text body: JSON when it parses, else only its length is shown. */
export function redactBody(text: string, isError: boolean): string {
  if (!text) return '';
  try {
    return JSON.stringify(redactJson(JSON.parse(text), isError));
  } catch {
    return `[${text.length} bytes of text]`;
  }
}

/**
 * Success bodies that are secrets as a whole, whoever sends the request (a typed command or
 * `fleetctl api`): the enroll values (the secret, and flags and scripts that carry it or its path).
 */
const SECRET_RESPONSE_PATH = /\/api\/v1\/environments\/[^/]+\/enroll\/[^/]+$/;

export function isSecretResponse(method: string, url: string): boolean {
  return method.toUpperCase() === 'GET' && SECRET_RESPONSE_PATH.test(new URL(url).pathname);
}
