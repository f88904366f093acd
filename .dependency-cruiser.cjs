/**
 * The floor plan of docs/ARCHITECTURE.md, checked in CI: the core never reaches up into a shell,
 * each core folder imports only the floors below it, sub-rooms keep their own order, and nothing
 * imports in a circle (type imports count: a type cycle is a design cycle).
 */

/** The core's floors, lowest first: a folder may import its own floor and those before it. */
const FLOORS = [
  'domain',
  'fs',
  'policy',
  'sandbox',
  'store',
  'backup',
  'audit',
  'actions',
  'executor',
  'runs',
  'ipc',
  'mcp',
  'hooks',
  'cli',
];
/** Sub-rooms with an order of their own, lowest first. */
const SUB_ROOMS = {
  audit: ['format', 'keys', 'log', 'export', 'verify', 'witness'],
  ipc: ['protocol', 'client', 'server', 'transports', 'host'],
};

const above = (list, i) => list.slice(i + 1).join('|');
const floorRules = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `floor-${floor}`,
  severity: 'error',
  comment: `src/${floor}/ imports only the floors below it (${FLOORS.slice(0, i).join(', ') || 'none'}): move what a lower floor needs down, never import up.`,
  from: { path: `^src/${floor}/` },
  to: { path: `^src/(${above(FLOORS, i)})/` },
}));
const subRoomRules = Object.entries(SUB_ROOMS).flatMap(([folder, rooms]) =>
  rooms.slice(0, -1).map((room, i) => ({
    name: `${folder}-${room}`,
    severity: 'error',
    comment: `src/${folder}/${room}/ imports only the ${folder} rooms below it (${rooms.slice(0, i).join(', ') || 'none'}).`,
    from: { path: `^src/${folder}/${room}/` },
    to: { path: `^src/${folder}/(${above(rooms, i)})/` },
  })),
);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files that import each other in a loop (type imports count): cut the loop by moving the shared part down.',
      from: {},
      to: { circular: true },
    },
    ...floorRules,
    ...subRoomRules,
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
      to: { path: '^src/(?!ipc/(client|protocol)/|domain/)' },
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
      to: {
        path: '^src/(?!ipc/client/client\\.ts$|ipc/protocol/(methods|protocol|wire-schemas|message-mac-web)\\.ts$|domain/(errors|risk|state-machine|canonical-text)\\.ts$)',
      },
    },
    {
      name: 'executor-rooms-share-only-the-desk',
      severity: 'error',
      comment: 'A room of the executor never imports another room: one room sets off another only through a port the facade wires.',
      from: { path: '^src/executor/rooms/([^/]+)\\.ts$' },
      to: { path: '^src/executor/rooms/', pathNot: '^src/executor/rooms/$1\\.ts$' },
    },
    {
      name: 'executor-helpers-below-the-rooms',
      severity: 'error',
      comment:
        'The helpers beside the rooms (live runs, the preview queue, grouped commits…) sit beneath them: one that imported a room would be a way between rooms.',
      from: { path: '^src/executor/[^/]+\\.ts$', pathNot: '^src/executor/executor\\.ts$' },
      to: { path: '^src/executor/rooms/' },
    },
    {
      name: 'executor-facade-only-from-its-owners',
      severity: 'error',
      comment: 'Only whoever opens a data directory (the host, the CLI) holds the Executor class; its other clients depend on their ports.',
      from: { path: '^src/', pathNot: '^src/(cli/|ipc/host/host\\.ts$|executor/executor\\.ts$)' },
      to: { path: '^src/executor/executor\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    combinedDependencies: true,
  },
};

// The plan itself, for test/unit/architecture/floor-plan.test.ts (a non-enumerable key: the config schema allows no extra ones).
Object.defineProperty(module.exports, 'floorPlan', { value: { FLOORS, SUB_ROOMS } });
