// Issue 27: --log is one JSON format for both doors and the server's own events; a stack trace is
// a field of its line. Without --log, events are text (a bug's stack after its line), requests silent.
import { describe, expect, it } from 'vitest';
import { serverLog } from '../../src/server/lib/server-log.js';
import { Faults } from '../../src/server/lib/faults.js';

const capture = (json: boolean) => {
  const out: string[] = [];
  const log = serverLog({ json, write: (t) => out.push(t), now: () => new Date('2026-11-26T00:00:00.000Z') });
  return { log, out };
};

describe('server log', () => {
  it('--log: requests of both doors and events are one JSON object a line, with the same keys first', () => {
    const { log, out } = capture(true);
    log.request({
      door: 'admin',
      method: 'GET',
      route: '/api/v1/nodes/:env',
      path: '/api/v1/nodes/prod',
      status: 200,
      ms: 3.14159,
      user: 'alice',
      ip: '10.0.0.1',
    });
    log.request({ door: 'agent', endpoint: 'config', status: 503, ms: 1, node: 'n-1' });
    log.event('warn', 'agent_tls', 'warning: the agent certificate expires in 3 day(s)');
    expect(out.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1)).toBe(true);
    const [a, b, c] = out.map((l) => JSON.parse(l));
    expect(a).toEqual({
      time: '2026-11-26T00:00:00.000Z',
      level: 'info',
      event: 'request',
      msg: 'admin GET /api/v1/nodes/:env 200',
      door: 'admin',
      method: 'GET',
      route: '/api/v1/nodes/:env',
      path: '/api/v1/nodes/prod',
      status: 200,
      ms: 3.1,
      user: 'alice',
      ip: '10.0.0.1',
    });
    expect(b).toMatchObject({ level: 'error', event: 'request', msg: 'agent config 503', door: 'agent', endpoint: 'config', node: 'n-1' });
    expect(c).toEqual({
      time: '2026-11-26T00:00:00.000Z',
      level: 'warn',
      event: 'agent_tls',
      msg: 'warning: the agent certificate expires in 3 day(s)',
    });
    expect(Object.keys(a).slice(0, 4)).toEqual(['time', 'level', 'event', 'msg']);
  });

  it("a bug's stack is a field of its one JSON line; in text it follows the line", () => {
    const j = capture(true);
    const faults = new Faults((line, f) =>
      j.log.event(f?.level ?? 'warn', f?.event ?? 'fault', line, f ? { ...f, event: undefined, level: undefined } : undefined),
    );
    faults.report('check-in flush', new TypeError('boom'));
    faults.report('agent log', Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
    faults.stop();
    expect(j.out).toHaveLength(2);
    const bug = JSON.parse(j.out[0]);
    expect(bug).toMatchObject({
      level: 'error',
      event: 'fault',
      msg: 'check-in flush failed (error): boom',
      where: 'check-in flush',
      kind: 'error',
    });
    expect(bug.stack).toMatch(/^TypeError: boom\n\s+at /);
    expect(JSON.parse(j.out[1])).toMatchObject({ level: 'warn', event: 'fault', where: 'agent log', kind: 'busy' });
    expect(JSON.parse(j.out[1]).stack).toBeUndefined();
    const t = capture(false);
    t.log.event('error', 'fault', 'x failed (error): boom', { stack: 'TypeError: boom\n    at f (a.js:1:1)' });
    t.log.request({ door: 'agent', endpoint: 'read', status: 200, ms: 1 });
    expect(t.out).toEqual(['x failed (error): boom\nTypeError: boom\n    at f (a.js:1:1)\n']);
  });
});
