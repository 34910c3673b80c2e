// The shells completions are generated for: tiny on purpose, as the CLI imports it at start-up
// (the generators themselves load only when `fleetctl completion` runs).
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Where each script is checked in (and shipped) in the package. */
export const COMPLETION_FILES: Record<Shell, string> = {
  bash: 'completions/fleetctl.bash',
  zsh: 'completions/_fleetctl',
  fish: 'completions/fleetctl.fish',
};
