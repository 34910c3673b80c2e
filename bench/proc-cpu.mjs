// CPU time of a process and all its descendants, from Linux's /proc (a server's workers, a
// cluster's backends): what the benches divide by the requests answered.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds (utime + stime) of a process and all its descendants, and how many processes that is (0 CPU off Linux). */
export function treeCpuSeconds(pid) {
  const stats = new Map();
  let entries = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return { cpu: 0, processes: 1 };
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      stats.set(Number(d), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      /* gone */
    }
  }
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, s] of stats) {
      if (!tree.has(p) && tree.has(s.ppid)) {
        tree.add(p);
        grew = true;
      }
    }
  }
  let cpu = 0;
  for (const p of tree) cpu += stats.get(p)?.cpu ?? 0;
  return { cpu, processes: tree.size };
}
