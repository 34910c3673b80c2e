// A read that many concurrent requests need, each as fresh as its own would be (issue 31: the
// change counters, read by every admin request). A caller may share a read only if that read
// starts after the call: it then sees every write committed before the caller asked, which is
// all its own read would have seen. So a caller arriving while a read is on its way waits for the
// next one, which starts when that read ends, and every caller arriving meanwhile shares it. On
// PostgreSQL under 20 concurrent readers this turns a round trip per request into one per few.

const ignore = () => {};

/** `read` shared by callers as above; a failed read fails only the callers that shared it. */
export function freshShared<T>(read: () => Promise<T>): () => Promise<T> {
  let flying: Promise<T> | undefined;
  let queued: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const p = read();
    flying = p;
    const land = () => {
      if (flying === p) flying = undefined;
    };
    p.then(land, land);
    return p;
  };
  return () => {
    if (!flying) return start();
    if (!queued) {
      queued = flying.then(ignore, ignore).then(() => {
        queued = undefined;
        return start();
      });
    }
    return queued;
  };
}
