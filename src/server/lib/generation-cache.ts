// Values read from the database that change only when one of its change counters moves
// (store/node-index.ts: readGenerations): kept per process, keyed by the counter value read at
// the start of the request, so a request after any write (on any replica) reads afresh. Holds
// promises, so concurrent requests share one read; a failed read is forgotten.

interface Space {
  generation: number;
  values: Map<string, Promise<unknown>>;
}

const spaces = new WeakMap<object, Map<string, Space>>();
/** Entries per space before it is emptied (keys are environment refs, jtis, setting names). */
const MAX_ENTRIES = 10_000;

export function byGeneration<T>(db: object, space: string, generation: number, key: string, read: () => Promise<T>): Promise<T> {
  let named = spaces.get(db);
  if (!named) spaces.set(db, (named = new Map<string, Space>()));
  let s = named.get(space);
  if (!s || s.generation !== generation) {
    // Only move forward: a request that read an older counter must not drop the newer entries.
    if (s && generation < s.generation) return read();
    named.set(space, (s = { generation, values: new Map() }));
  }
  let v = s.values.get(key) as Promise<T> | undefined;
  if (!v) {
    if (s.values.size >= MAX_ENTRIES) s.values.clear();
    const entries = s.values;
    v = read();
    entries.set(key, v);
    v.catch(() => entries.delete(key));
  }
  return v;
}
