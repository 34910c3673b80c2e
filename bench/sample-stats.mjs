// What a window's sample of agent requests adds up to, one way for every bench that reads the
// agents' samples (bench/agents.mjs, and its --baseline in bench/agent-baseline.mjs).

/** The p-th percentile of ascending `sorted` (0 when empty). */
export const percentile = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : 0;

/** A sample's latencies other than enrollments (ascending), its failed requests, and all its requests. */
export function windowTotals(sample) {
  const latencies = Object.entries(sample.lat)
    .filter(([k]) => k !== 'enroll')
    .flatMap(([, v]) => v)
    .sort((a, b) => a - b);
  const errors = Object.values(sample.errors).reduce((a, b) => a + b, 0);
  const requests = Object.values(sample.lat).reduce((a, v) => a + v.length, 0) + errors;
  return { latencies, errors, requests };
}
