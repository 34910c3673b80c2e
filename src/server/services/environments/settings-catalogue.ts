// What each built-in setting does on this server (issue 29: none is stored and ignored). The
// ten are osctrl's (contract 4.14); those with a meaning here act, the others are refused when
// changed (400, one line why) and say so in their `info`. Settings not listed here (added by a
// later feature) keep their stored info and may be set per environment.

export type SettingRule =
  | {
      /** 'server': one value for the whole server (an environment override would mean nothing). */
      scope: 'server' | 'environment';
      /** What it does, shown as the setting's info. */
      effect: string;
    }
  | {
      /** Why it has no effect here; changing it is refused with this reason. */
      refused: string;
    };

const NOT_ON_A_TIMER = 'changes reach every request on every replica at once (change counters), nothing is re-read on a timer';

export const SETTING_RULES: Readonly<Record<string, SettingRule>> = {
  'admin/inactive_hours': {
    scope: 'environment',
    effect: 'Hours without a check-in after which a node is inactive (nodes list --status, health, stats)',
  },
  'admin/cleanup_sessions': { scope: 'server', effect: 'Seconds between purges of ended sessions and expired MFA challenges' },
  'admin/cleanup_expired': {
    scope: 'server',
    effect: 'Seconds between clean-ups of what has expired: live queries and carves past their expiration are marked expired',
  },
  'admin/node_dashboard': {
    refused: 'this server has no web dashboard (it is an osctrl-admin page switch); fleetctl stats and nodes show are the views',
  },
  'api/service_metrics': {
    scope: 'server',
    effect: 'Serve Prometheus metrics at /metrics of the API (super-admins); --metrics-listen serves them regardless',
  },
  'api/refresh_envs': { refused: `environment ${NOT_ON_A_TIMER}` },
  'api/refresh_settings': { refused: `setting ${NOT_ON_A_TIMER}` },
  'tls/refresh_envs': { refused: `environment ${NOT_ON_A_TIMER} (the agent door included)` },
  'tls/accelerated_seconds': {
    scope: 'environment',
    effect: "Seconds after enrolling during which a node asks for live queries every 5 s (osquery's accelerate); 0 turns it off",
  },
  'tls/oneliner_expiration': { scope: 'environment', effect: 'The install one-liners stop working when the enrollment expires' },
};

export const settingRule = (service: string, name: string): SettingRule | undefined => SETTING_RULES[`${service}/${name}`];

/** The info a setting shows: what it does here, or that it does nothing here and why. */
export function settingInfo(service: string, name: string, stored: string): string {
  const rule = settingRule(service, name);
  if (!rule) return stored;
  return 'refused' in rule ? `No effect on this server: ${rule.refused}` : rule.effect;
}
