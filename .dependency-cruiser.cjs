// The walls of the code (docs: README "Where things live"; /shared/design/architecture.md), checked
// by `npm test` (npm run lint:deps): a circle or a breach fails with the path that closes it.
// Type-only imports count: a circle of types is still a tangle a reader has to hold in mind.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No import circles, of values or of types.', from: {}, to: { circular: true } },
    {
      name: 'client-not-server',
      severity: 'error',
      comment:
        'The client (and the CLI around it) never imports the server: they meet only over HTTP and src/api. ' +
        'The one exception is the command that starts the server (fleetctl server), loaded only by that verb.',
      from: { path: '^src/(client|commands|output|auth|config|lib|agent-sim)/', pathNot: '^src/commands/server/' },
      to: { path: '^src/server/' },
    },
    {
      name: 'server-not-cli',
      severity: 'error',
      comment: 'The server never imports the client, the output or the commands.',
      from: { path: '^src/server/' },
      to: { path: '^src/(client|output|commands)/' },
    },
    {
      name: 'routes-not-app',
      severity: 'error',
      comment: 'Routes take what they need from routes/request.ts, never from the app that registers them.',
      from: { path: '^src/server/routes/' },
      to: { path: '^src/server/app\\.ts$' },
    },
    {
      name: 'admin-door-not-agent-door',
      severity: 'error',
      comment: 'The two doors (admin API, agent API) never import each other.',
      from: { path: '^src/server/(routes/|app\\.ts$)' },
      to: { path: '^src/server/agent/' },
    },
    {
      name: 'agent-door-not-admin-door',
      severity: 'error',
      comment: 'The two doors (admin API, agent API) never import each other.',
      from: { path: '^src/server/agent/' },
      to: { path: '^src/server/(routes/|app\\.ts$)' },
    },
    {
      name: 'services-not-doors',
      severity: 'error',
      comment: 'Services hold the rules; the doors call them, never the other way round.',
      from: { path: '^src/server/services/' },
      to: { path: '^src/server/(routes/|agent/|app\\.ts$|start\\.ts$)' },
    },
    {
      name: 'store-not-services',
      severity: 'error',
      comment: 'The store knows tables and queries, not the rules that use them.',
      from: { path: '^src/server/store/' },
      to: { path: '^src/server/(services|routes|agent)/' },
    },
    {
      name: 'api-is-shared',
      severity: 'error',
      comment: 'src/api is the contract both sides use: it imports neither side.',
      from: { path: '^src/api/' },
      to: { path: '^src/(server|client|commands|output)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    // Only the project's own modules matter to these rules.
    exclude: { path: '^node_modules' },
  },
};
