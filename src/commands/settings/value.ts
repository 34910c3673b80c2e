// Turning the VALUE argument of `settings set` into the typed body field the server expects.
import type { Setting, SettingUpdateBody } from '../../api/index.js';
import { UsageError } from '../../errors.js';

const TRUE = new Set(['true', 'yes', 'y', 'on', '1']);
const FALSE = new Set(['false', 'no', 'n', 'off', '0']);

/** The value of a setting, from the field its type names. */
export function settingValue(s: Setting): boolean | number | string | undefined {
  switch (s.type) {
    case 'boolean':
      return s.boolean;
    case 'integer':
      return s.integer;
    case 'string':
      return s.string;
    default:
      return undefined;
  }
}

/** `{type, <type>: value}` for `raw`, or a UsageError saying why `raw` does not fit the type. */
export function settingBody(setting: Pick<Setting, 'name' | 'type'>, raw: string): SettingUpdateBody {
  const v = raw.trim();
  switch (setting.type) {
    case 'boolean': {
      const l = v.toLowerCase();
      if (TRUE.has(l)) return { type: 'boolean', boolean: true };
      if (FALSE.has(l)) return { type: 'boolean', boolean: false };
      throw new UsageError(`${setting.name} is a boolean setting; "${raw}" is not a boolean (use true/false, yes/no, on/off or 1/0)`);
    }
    case 'integer': {
      const n = Number(v);
      if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n))
        throw new UsageError(`${setting.name} is an integer setting; "${raw}" is not an integer`);
      return { type: 'integer', integer: n };
    }
    case 'string':
      return { type: 'string', string: raw };
    default:
      throw new UsageError(`${setting.name} has type "${setting.type}", which this fleetctl cannot set`);
  }
}
