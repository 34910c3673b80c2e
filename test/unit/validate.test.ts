// The answer check of the one HTTP client: a mismatch is one line naming the first wrong field;
// errors without `code` (osctrl) get one from the status, text bodies are trimmed.
import { describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { checkAnswer, needs, UnexpectedAnswerError } from '../../src/client/validate.js';
import { toApiError } from '../../src/client/http.js';
import { Node, Paginated, TokenResponse, User } from '../../src/api/index.js';
import { mapError } from '../../src/errors.js';

describe('checkAnswer', () => {
  it('passes a matching answer through and names the first field of the wrong type with its path', () => {
    const user = Value.Create(User);
    expect(checkAnswer(Type.Array(User), [user], 'users')).toEqual([user]);
    expect(() => checkAnswer(User, { ...user, admin: 'yes' })).toThrow(/^unexpected answer from the server: admin: expected boolean$/);
    expect(() => checkAnswer(Type.Array(User), [user, { ...user, mfa: { totp: 1 } }], 'users')).toThrow(
      'unexpected answer from the server: users[1].mfa.totp: expected boolean',
    );
  });

  it('a missing optional field is never an error: it is filled with its zero value, at any depth (issue 19)', () => {
    // What osctrl sends for a VM: omitempty leaves out the empty BIOS fields and the node's derived fields.
    const raw = { uuid: 'U1', hostname: 'web-1', system_info: { bios: { vendor: 'SeaBIOS' }, os: { name: 'Ubuntu' } } };
    const node = checkAnswer<Record<string, any>>(Node, raw);
    expect(node.system_info.bios).toEqual({
      vendor: 'SeaBIOS',
      address: '',
      date: '',
      revision: '',
      size: '',
      version: '',
      volume_size: '',
    });
    expect(node.system_info.system.cpu_brand).toBe('');
    expect(node).toMatchObject({ tags: [], health: { status: '', signals: [] }, bytes_received: 0, last_seen: '' });
    expect('node_key' in node).toBe(false); // optional in the schema: stays absent
    const { environments: _e, ...noEnvs } = Value.Create(User);
    void _e;
    expect(checkAnswer<{ environments: unknown[] }>(User, noEnvs).environments).toEqual([]);
  });

  it('requires only what a command needs (needs()): a page without items, a node without uuid, a login without token', () => {
    const page = needs(Paginated(needs(Node, 'uuid')), 'items');
    expect(() => checkAnswer(page, { page: 1 })).toThrow('unexpected answer from the server: items is missing');
    expect(() => checkAnswer(page, { items: [{ uuid: 'U1' }, { hostname: 'x' }] })).toThrow(
      'unexpected answer from the server: items[1].uuid is missing',
    );
    expect(checkAnswer<{ total_pages: number }>(page, { items: [] }).total_pages).toBe(0);
    expect(() => checkAnswer(needs(TokenResponse, 'token'), { csrf_token: 'c' })).toThrow(/token is missing/);
    expect(checkAnswer(needs(TokenResponse, 'token'), { token: 't' })).toEqual({ token: 't', csrf_token: '' });
    // needs() copies: the schema the server serializes with keeps its own `required`.
    expect(Node.required).toContain('hostname');
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
    expect(toApiError(422, '{"type":"about:blank","title":"Unprocessable","detail":"name is too long"}')).toMatchObject({
      code: 'unknown',
      message: 'name is too long',
    });
    expect(toApiError(401, '{"error":"unauthorized","code":"unauthorized"}')).toMatchObject({ code: 'unauthorized' });
  });
});

describe('a page of 500 nodes', () => {
  // What a check of a full page does; how fast it is belongs to npm run bench, not to a test.
  it('passes whole, and one wrong field among the 500 is named with its item', () => {
    const node = { ...Value.Create(Node), hostname: 'host-0001', tags: [] };
    const page = {
      items: Array.from({ length: 500 }, (_, i) => ({ ...node, id: i, uuid: `U${i}` })),
      page: 1,
      page_size: 500,
      total_items: 500,
      total_pages: 1,
    };
    const schema = Paginated(Node);
    const checked = checkAnswer<typeof page>(schema, JSON.parse(JSON.stringify(page)), 'nodes');
    expect(checked.items).toHaveLength(500);
    expect(checked.items[499].uuid).toBe('U499');
    const bad = JSON.parse(JSON.stringify(page));
    bad.items[321].last_seen = 12;
    expect(() => checkAnswer(schema, bad, 'nodes')).toThrow(
      'unexpected answer from the server: nodes.items[321].last_seen: expected string',
    );
  });
});
