// The SQL check of osquery configurations (src/lib/sql-check.ts): SQLite syntax through the
// grammar parser, and its answers kept by text (asked again, the same text gets the same answer).
import { describe, expect, it } from 'vitest';
import { checkSql, SQL_MAX } from '../../src/lib/sql-check.js';

describe('checkSql', () => {
  it('accepts one SELECT over tables it does not know; says what is wrong otherwise, the same each time', () => {
    for (let i = 0; i < 2; i++) {
      expect(checkSql('SELECT uid, username FROM users WHERE uid > 500')).toBeUndefined();
      expect(checkSql('SELECT * FORM users')).toMatch(/^SQL syntax error at line 1, column \d+ near "[^"]*FORM users"$/);
      expect(checkSql('SELECT 1; SELECT 2')).toBe('must be one statement, not 2');
      expect(checkSql('DELETE FROM users')).toBe('must be a SELECT statement, not DELETE');
      expect(checkSql('  ')).toBe('must not be empty (the SQL to run)');
      expect(checkSql(`SELECT '${'x'.repeat(SQL_MAX)}'`)).toBe(`is longer than ${SQL_MAX} characters`);
    }
  });
});
