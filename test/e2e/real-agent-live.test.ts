// Live queries with the real osquery agent (issue 26 item 2): osquery's own error text; an answer
// over 1 MiB is delivered, one over the server's 16 MiB bound is reported as too large; either
// way the next query on that host is answered (a refused answer used to stay in osquery's buffer
// and go out again with every later one, wedging the host's live queries until a restart).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';

/** `rows` rows of (x, 200 hex characters): about 230 bytes a row in osquery's answer. */
const padded = (rows: number) =>
  `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < ${rows}) SELECT x, hex(randomblob(100)) AS pad FROM c`;

describeRealAgent('real osquery agent: live queries, errors and big answers', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;

  beforeAll(async () => {
    srv = await startAgentServer();
    agent = startOsqueryd({ enrollment: await srv.enrollment() });
    uuid = await agent.identifier();
    await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node to fetch its configuration');
  });

  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  const run = (sql: string, ...more: string[]) => srv.cli.run(['query', 'run', sql, '--target', uuid, '--exit', '--wait', '3m', ...more]);
  const small = async () => {
    const r = await run('SELECT 42 AS answer', '-o', 'json');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ uuid, status: 0, rows: [{ answer: '42' }] })]);
  };

  it("an error query gets osquery's own error text, exit 9", async () => {
    const r = await run('SELECT * FROM no_such_table_here');
    expect(r.exitCode).toBe(9);
    expect(r.stderr).toMatch(/error: no such table: no_such_table_here/);
    expect(r.stderr).toContain('1 of 1 answered with an error');
  });

  it('an answer over 1 MiB (10,000 rows, about 2.5 MB) is delivered whole, then a small query is answered', async () => {
    const r = await run(padded(10_000), '-o', 'json');
    expect(r.exitCode, r.stderr).toBe(0);
    const [a] = JSON.parse(r.stdout) as { uuid: string; status: number; rows: { x: string; pad: string }[] }[];
    expect(a.status).toBe(0);
    expect(a.rows).toHaveLength(10_000);
    expect(a.rows[9_999]).toEqual({ x: '10000', pad: expect.stringMatching(/^[0-9A-F]{200}$/) });
    await small();
  });

  it('an answer over 16 MiB is reported as too large for that node, then a small query is answered', async () => {
    const r = await run(padded(100_000));
    expect(r.exitCode).toBe(9);
    expect(r.stderr).toMatch(/error: the answer was \d+ bytes, over this server's limit of 16777216 bytes \(16 MiB\); it was discarded/);
    const results = await srv.api('GET', `/api/v1/queries/prod/results/${/Query (\S+) started/.exec(r.stderr)![1]}`);
    expect(results.body.items).toEqual([
      expect.objectContaining({ uuid, status: 1, rows: [], error: expect.stringContaining("over this server's limit") }),
    ]);
    await small();
  });
});
