// Work that must run before the process ends early (a closed stdout pipe), such as cancelling a
// live query that this command started. Ctrl-C is handled where it happens (the command stops
// waiting and cleans up itself); this is for the exits main.ts takes on its own.
type Hook = () => Promise<unknown>;

const hooks = new Set<Hook>();

/** Registers `hook`; the returned function removes it (call it once the work is done). */
export function onEarlyExit(hook: Hook): () => void {
  hooks.add(hook);
  return () => hooks.delete(hook);
}

let running: Promise<void> | undefined;

/** Runs every hook once (each bounded by `ms`), ignoring their failures; later calls wait for the same run. */
export function runEarlyExitHooks(ms = 5000): Promise<void> {
  running ??= Promise.all(
    [...hooks].map((h) => Promise.race([h().catch(() => undefined), new Promise((r) => setTimeout(r, ms).unref())])),
  ).then(() => {
    hooks.clear();
  });
  return running;
}
