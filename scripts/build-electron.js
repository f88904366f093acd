#!/usr/bin/env node
// Bundles the Electron main process (ESM) and the preload (one CommonJS file: a sandboxed preload
// cannot require other files) into dist-electron/, and copies the light sandbox's worker beside them.
import fs from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = (await import(path.join(root, 'package.json'), { with: { type: 'json' } })).default;
const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];
// The main process loads its dependencies from node_modules (better-sqlite3 is native and unpacked from asar).
const mainExternals = [...nodeBuiltins, 'electron', ...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})];
const isExternal = (list) => (id) => list.some((name) => id === name || id.startsWith(`${name}/`));

const common = { root, configFile: false, logLevel: 'warn', publicDir: false };

await build({
  ...common,
  build: {
    outDir: 'dist-electron',
    emptyOutDir: true,
    target: 'node20',
    minify: false,
    sourcemap: true,
    ssr: true,
    lib: {
      entry: { main: path.join(root, 'electron/main.ts'), 'host-thread-worker': path.join(root, 'src/ipc/host/host-thread-worker.ts') },
      formats: ['es'],
      fileName: (_format, name) => `${name}.js`,
    },
    rollupOptions: { external: isExternal(mainExternals) },
  },
});

await build({
  ...common,
  build: {
    outDir: 'dist-electron',
    emptyOutDir: false,
    target: 'chrome130',
    minify: false,
    sourcemap: false,
    lib: { entry: path.join(root, 'electron/preload.ts'), formats: ['cjs'], fileName: () => 'preload.cjs' },
    rollupOptions: { external: ['electron'] },
  },
});

// The light sandbox's worker is not bundled: it runs as its own process (a utility process in the
// app), which needs a real file. light-sandbox.ts finds it next to the module that holds it, which
// here is host-thread-worker.js; electron-builder unpacks it from the asar archive (asarUnpack).
fs.copyFileSync(path.join(root, 'src/sandbox/light/worker.cjs'), path.join(root, 'dist-electron/worker.cjs'));

// The command policy's bash parser is WebAssembly: the runtime (web-tree-sitter) and the grammar
// (tree-sitter-bash). src/policy/shell-parser.ts looks for both next to the module that holds it
// (host-thread-worker.js here) before node_modules; electron-builder unpacks them from the asar archive.
const require = createRequire(import.meta.url);
for (const wasm of ['web-tree-sitter/tree-sitter.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm']) {
  fs.copyFileSync(require.resolve(wasm), path.join(root, 'dist-electron', path.basename(wasm)));
}

console.log("built dist-electron/main.js, host-thread-worker.js, preload.cjs, worker.cjs and the shell parser's .wasm files");
