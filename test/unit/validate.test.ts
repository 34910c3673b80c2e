// The answer check of the one HTTP client: a mismatch is one line naming the first wrong field;
// errors without `code` (osctrl) get one from the status, text bodies are trimmed.
import { describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { checkAnswer, UnexpectedAnswerError } from '../../src/client/validate.js';
import { toApiError } from '../../src/client/http.js';
import { Node, Paginated, User } from '../../src/api/index.js';
import { mapError } from '../../src/errors.js';

describe('checkAnswer', () => {
  it('passes a matching answer through and names the first missing field with its path', () => {
    const user = Value.Create(User);
    expect(checkAnswer(Type.Array(User), [user], 'users')).toEqual([user]);
    const { environments: _e, ...noEnvs } = user;
    void _e;
    expect(() => checkAnswer(Type.Array(User), [user, noEnvs], 'users')).toThrow('unexpected answer from the server: users[1].environments is missing');
    expect(() => checkAnswer(User, { ...user, admin: 'yes' })).toThrow(/^unexpected answer from the server: admin: expected boolean$/);
  });

  it('is a CliError with exit 1 and a --debug hint', () => {
    try {
      checkAnswer(User, null);
    } catch (e) {
      expect(e).toBeInstanceOf(UnexpectedAnswerError);
      expect(mapError(e)).toMatchObject({ exitCode: 1, hint: expect.stringMatching(/--debug/) });
    }
  });
});

describe('errors without code', () => {
  it('derive the code from the status and trim Go text bodies', () => {
    expect(toApiError(404, '404 page not found\n')).toMatchObject({ code: 'not_found', message: '404 page not found' });
    expect(toApiError(405, 'Method Not Allowed\n')).toMatchObject({ code: 'not_found', message: 'Method Not Allowed' });
    expect(toApiError(403, '{"error":"no access"}')).toMatchObject({ code: 'forbidden', message: 'no access' });
    expect(toApiError(500, '{"error":"error adding user"}')).toMatchObject({ code: 'internal' });
    expect(toApiError(422, '{"type":"about:blank","title":"Unprocessable","detail":"name is too long"}')).toMatchObject({ code: 'unknown', message: 'name is too long' });
    expect(toApiError(401, '{"error":"unauthorized","code":"unauthorized"}')).toMatchObject({ code: 'unauthorized' });
  });
});

describe('cost on a page of 500 nodes', () => {
  it('is measured (printed, not asserted: speed belongs to npm run bench)', () => {
    const node = { ...Value.Create(Node), hostname: 'host-0001', tags: [] };
    const page = { items: Array.from({ length: 500 }, (_, i) => ({ ...node, id: i, uuid: `U${i}` })), page: 1, page_size: 500, total_items: 500, total_pages: 1 };
    const schema = Paginated(Node);
    const text = JSON.stringify(page);
    checkAnswer(schema, JSON.parse(text)); // compile once
    const runs = 50;
    let parse = 0;
    let check = 0;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const v = JSON.parse(text);
      const t1 = performance.now();
      checkAnswer(schema, v);
      check += performance.now() - t1;
      parse += t1 - t0;
    }
    console.log(`500-node page (${(text.length / 1024).toFixed(0)} KiB): JSON.parse ${(parse / runs).toFixed(2)} ms, schema check ${(check / runs).toFixed(2)} ms`);
  });
});
