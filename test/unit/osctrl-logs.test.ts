// Issue 30: osctrl's log lines as this API's (src/client/flavors/osctrl/logs.ts), from the answer of
// a real osctrl-api 0.5.4 (3c1c5ab4, db logger, a real osqueryd 5.23.0 enrolled through osctrl-tls)
// to GET /api/v1/logs/status/prod/{uuid}?limit=3, as it came on 2026-11-26.
import { describe, expect, it } from 'vitest';
import { lineFromOsctrl, timeKey } from '../../src/client/flavors/osctrl/logs.js';

const REAL = {
  items: [
    {
      created_at: '2026-11-26T04:18:05.334945Z',
      environment: 'prod',
      filename: 'config.cpp',
      id: 36,
      line: '997',
      message: 'Calling configure for logger tls',
      severity: '0',
      uuid: '81B1C24E-333C-4F2F-867A-42F163BF3C8C',
      version: '5.23.0',
    },
    {
      created_at: '2026-11-26T04:18:00.261856Z',
      environment: 'prod',
      filename: 'config.cpp',
      id: 34,
      line: '997',
      message: 'Calling configure for logger tls',
      severity: '0',
      uuid: '81B1C24E-333C-4F2F-867A-42F163BF3C8C',
      version: '5.23.0',
    },
    {
      created_at: '2026-11-26T04:17:50.2106Z',
      environment: 'prod',
      filename: 'config.cpp',
      id: 31,
      line: '997',
      message: 'Calling configure for logger tls',
      severity: '0',
      uuid: '81B1C24E-333C-4F2F-867A-42F163BF3C8C',
      version: '5.23.0',
    },
  ],
  type: 'status',
  uuid: '81B1C24E-333C-4F2F-867A-42F163BF3C8C',
  env: 'cde7d5b5-6cbf-4ce5-b19b-8f6342894828',
  limit: 3,
};

describe('osctrl log lines', () => {
  it('a status row becomes the API line, severity and line as osctrl keeps them (strings)', () => {
    expect(lineFromOsctrl(REAL.items[0], 'status', 'prod', 'web-prod-1')).toEqual({
      id: 36,
      environment: 'prod',
      node_uuid: '81B1C24E-333C-4F2F-867A-42F163BF3C8C',
      hostname: 'web-prod-1',
      log_type: 'status',
      received_at: '2026-11-26T04:18:05.334Z',
      entry: { severity: '0', filename: 'config.cpp', line: '997', message: 'Calling configure for logger tls', version: '5.23.0' },
    });
  });
  it('a result row carries its name and its columns parsed', () => {
    const l = lineFromOsctrl(
      {
        id: 7,
        created_at: '2026-11-26T04:18:05Z',
        uuid: 'U',
        environment: 'prod',
        name: 'q',
        action: 'added',
        epoch: 0,
        counter: 3,
        columns: '{"a":"1"}',
      },
      'result',
      'prod',
      'h',
    );
    expect(l).toMatchObject({ name: 'q', log_type: 'result', entry: { name: 'q', action: 'added', counter: 3, columns: { a: '1' } } });
  });
  it("osctrl's times order by their microseconds, whatever trailing zeros Go trimmed", () => {
    const times = [
      '2026-11-26T04:17:50.21Z',
      '2026-11-26T04:17:50.2106Z',
      '2026-11-26T04:17:50Z',
      '2026-11-26T04:17:50.209999Z',
      '2026-11-26T06:17:50.1+02:00',
    ];
    expect([...times].sort((a, b) => (timeKey(a) < timeKey(b) ? -1 : 1))).toEqual([
      '2026-11-26T04:17:50Z',
      '2026-11-26T06:17:50.1+02:00',
      '2026-11-26T04:17:50.209999Z',
      '2026-11-26T04:17:50.21Z',
      '2026-11-26T04:17:50.2106Z',
    ]);
  });
});
