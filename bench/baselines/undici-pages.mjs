// Baseline for `fleetctl nodes list --all -o jsonl`: a raw undici loop over the pages (500 a
// page, one after the other), one JSON line per node on stdout.
import { request } from 'undici';

const env = process.argv[2] ?? 'prod';
const headers = { authorization: `Bearer ${process.env.FLEETCTL_TOKEN}` };
for (let page = 1; ; page++) {
  const { statusCode, body } = await request(`${process.env.FLEETCTL_URL}/api/v1/nodes/${env}?page=${page}&page_size=500`, { headers });
  if (statusCode !== 200) throw new Error(`HTTP ${statusCode}`);
  const p = await body.json();
  let out = '';
  for (const n of p.items) out += `${JSON.stringify(n)}\n`;
  process.stdout.write(out);
  if (page >= p.total_pages) break;
}
