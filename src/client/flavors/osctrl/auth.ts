import { Type } from '../../../api/type.js';
import { TokenResponse } from '../../../api/index.js';
import { ApiError, CliError, ExitCode } from '../../../errors.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { refuse } from './shapes.js';

export function authResource(s: OsctrlSession) {
  const { http, base, envUuid } = s;
  return {
    ...base.auth,
    /**
     * osctrl's `/login/{env}` lets in only admins of that environment: anyone else costs a failed
     * login (a warning in osctrl's audit log) and a second try, against a limit of 10 logins a
     * minute. Its token is the same as the environment-less `/login`'s, so fleetctl checks the
     * environment exists in osctrl's pre-login list (no password sent for a wrong name) and logs
     * in once without it. A wrong password is 403 `invalid credentials` there.
     */
    login: async (env: string, body: Parameters<FleetResources['auth']['login']>[1]) => {
      await envUuid(env);
      try {
        return checkAnswer<TokenResponse>(needs(TokenResponse, 'token'), await http.request<unknown>('POST', 'api/v1/login', { body }));
      } catch (e) {
        if (e instanceof ApiError && e.status === 403 && /invalid credentials/i.test(e.message)) {
          throw new CliError('invalid credentials (osctrl, HTTP 403)', ExitCode.auth, 'check the username and password');
        }
        throw e;
      }
    },
    mfaLogin: () => refuse('MFA login (second factor)'),
    /**
     * osctrl's logout ends only a session whose token comes as its `osctrl_token` cookie (the
     * browser's); a Bearer header is ignored and the token would stay valid. Then the token is
     * tried once more: osctrl answers 200 to a logout whatever happened, so only a refused
     * token says the session really ended.
     */
    logout: async () => {
      const token = http.opts.token ?? '';
      const r = checkAnswer<{ message?: string }>(
        Type.Object({}),
        await http.request<unknown>('POST', 'api/v1/logout', { headers: { cookie: `osctrl_token=${token}` } }),
      );
      try {
        await http.request<unknown>('GET', 'api/v1/users/me');
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return { message: r.message ?? 'logged out' };
        throw e;
      }
      throw new CliError('osctrl still accepts the token after its logout', ExitCode.error);
    },
  };
}
