// Which processes a server started, read from Linux's /proc (the tests that need it run on Linux).
import { readFileSync, readdirSync } from 'node:fs';

/** The processes whose parent is `pid`: a server's worker processes, when it has any. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // The command name (field 2) may hold spaces and parentheses; the fields after its last ')' do not.
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      /* the process ended while we read */
    }
  }
  return out;
}
