/** The layering of docs/ARCHITECTURE.md, checked in CI: the core never reaches up into a shell. */
module.exports = {
  forbidden: [
    {
      name: 'core-has-no-electron-react-or-renderer',
      severity: 'error',
      comment: 'src/ is plain Node: Electron features reach it through interfaces main.ts implements.',
      from: { path: '^src/' },
      to: { path: '^(renderer/|electron/)|node_modules/(electron|react|react-dom)/' },
    },
    {
      name: 'core-imports-no-electron-module',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['core', 'npm', 'npm-optional', 'npm-dev', 'unknown', 'undetermined'], path: '^(electron|react|react-dom)$' },
    },
    {
      name: 'renderer-only-through-the-client',
      severity: 'error',
      comment: 'The renderer never sees Node or the core: it calls nothing but the typed client.',
      from: { path: '^renderer/' },
      to: { path: '^src/(?!ipc/(client|methods|protocol|wire-schemas|web-client|renderer-entry|line-framing|message-mac-web)|domain/)' },
    },
    {
      name: 'renderer-sees-no-node',
      severity: 'error',
      comment: 'The renderer runs in a browser page under a strict CSP: no Node built-ins, no Electron.',
      from: { path: '^renderer/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'renderer-has-no-electron',
      severity: 'error',
      from: { path: '^renderer/' },
      to: { path: '^(electron/)|node_modules/electron/' },
    },
    {
      name: 'renderer-never-reaches-main',
      severity: 'error',
      comment: 'The renderer talks to the main process only through the preload-exposed client.',
      from: { path: '^renderer/' },
      to: { path: '^electron/' },
    },
    {
      name: 'preload-only-browser-safe-ipc',
      severity: 'error',
      comment: 'The sandboxed preload is bundled for the renderer process: only the browser-safe protocol and client.',
      from: { path: '^electron/preload\\.ts$' },
      to: { path: '^src/(?!ipc/(client|methods|protocol|wire-schemas|message-mac-web)\\.ts$|domain/(errors|risk|state-machine|canonical-text)\\.ts$)' },
    },
    {
      name: 'executor-rooms-share-only-the-desk',
      severity: 'error',
      comment: 'A room of the executor never imports another room: one room sets off another only through a port the facade wires.',
      from: { path: '^src/executor/rooms/([^/]+)\\.ts$' },
      to: { path: '^src/executor/rooms/', pathNot: '^src/executor/rooms/$1\\.ts$' },
    },
    {
      name: 'executor-facade-only-from-its-owners',
      severity: 'error',
      comment: 'Only whoever opens a data directory (the host, the CLI) holds the Executor class; its other clients depend on their ports.',
      from: { path: '^src/', pathNot: '^src/(cli/|ipc/[a-z/-]*host\\.ts$|executor/executor\\.ts$)' },
      to: { path: '^src/executor/executor\\.ts$' },
    },
    {
      name: 'executor-has-no-cycles',
      severity: 'error',
      from: { path: '^src/(executor|runs)/' },
      to: { circular: true },
    },
    {
      name: 'domain-has-no-io-layers',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/(?!domain/)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    combinedDependencies: true,
  },
};
