// Group commit for the agent door's single-statement writes (issue 31): every statement asked
// for during one turn of the event loop goes to the store's writer as one transaction, and each
// caller gets its own statement's result once that transaction committed. 83 enrolls a second
// were 83 transactions, each writing and syncing its pages to the WAL on its own; grouped they
// are a few, off the event loop (Store.write). A transaction that fails fails every statement of
// its group (the database is down or full: each request is answered 503 and retried).
import type { CompiledQuery, QueryResult } from 'kysely';

type Write = (statements: CompiledQuery[]) => Promise<QueryResult<unknown>[]>;

interface Waiting {
  statements: CompiledQuery[];
  resolve: (r: QueryResult<unknown>[]) => void;
  reject: (e: unknown) => void;
}

export class WriteGroup {
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly write: Write,
    /** Callers a transaction takes at most; more go in the next one. */
    private readonly max = 500,
  ) {}

  /** Runs the statements (together, in one transaction with the others of this turn); their results in order. */
  run(statements: CompiledQuery[]): Promise<QueryResult<unknown>[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ statements, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.send());
      }
    });
  }

  private send(): void {
    this.scheduled = false;
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.max);
      this.write(group.flatMap((w) => w.statements)).then(
        (results) => {
          let at = 0;
          for (const w of group) {
            w.resolve(results.slice(at, at + w.statements.length));
            at += w.statements.length;
          }
        },
        (e) => group.forEach((w) => w.reject(e)),
      );
    }
  }
}
