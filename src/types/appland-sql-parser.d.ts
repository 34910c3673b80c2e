// @appland/sql-parser ships no types: the one call we make (parse a string, throw on a syntax
// error with its location) is declared here.
declare module '@appland/sql-parser' {
  function parse(sql: string): unknown;
  export default parse;
}
