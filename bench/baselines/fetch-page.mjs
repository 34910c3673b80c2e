// Baseline for `fleetctl nodes list --json`: the same request with a bare fetch, printed as JSON.
const r = await fetch(`${process.env.FLEETCTL_URL}/api/v1/nodes/${process.argv[2] ?? 'prod'}`, {
  headers: { authorization: `Bearer ${process.env.FLEETCTL_TOKEN}` },
});
if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
process.stdout.write(`${JSON.stringify(await r.json(), null, 2)}\n`);
