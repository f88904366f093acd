import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Parser, Tree } from 'web-tree-sitter';

/**
 * The one bash parser of the process: tree-sitter's bash grammar, run as WebAssembly through
 * web-tree-sitter. Loading is asynchronous (WebAssembly compiles once, ~50 ms); each parse after
 * that is synchronous and fast, so the command policy stays synchronous. Until it is loaded, or if
 * it cannot load, `parseShell` says so and the caller must treat the command as unknowable.
 */

type ParserState =
  | { status: 'idle' }
  | { status: 'loading'; ready: Promise<void> }
  | { status: 'ready'; parser: Parser }
  | { status: 'failed'; reason: string };

let state: ParserState = { status: 'idle' };

/** No command line the step schema admits is longer; a longer text is refused rather than parsed. */
export const MAX_SHELL_TEXT = 64 * 1024;

/**
 * Where a wasm file is: next to the running module first (the Electron build copies both files
 * beside dist-electron/host-thread-worker.js), then in its package. Inside a packaged app the
 * files are unpacked from the asar archive, so a path into `app.asar` is read from `app.asar.unpacked`.
 */
export function locateWasm(fileName: string, packagePath: string, moduleDir = path.dirname(fileURLToPath(import.meta.url))): string {
  const candidates = [path.join(moduleDir, fileName)];
  try {
    candidates.push(createRequire(import.meta.url).resolve(packagePath));
  } catch {
    /* the package is not installed: only the copy next to the module can serve */
  }
  for (const candidate of candidates) {
    const unpacked = candidate.replace(/([\\/])app\.asar([\\/])/, '$1app.asar.unpacked$2');
    if (unpacked !== candidate && fs.existsSync(unpacked)) return unpacked;
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`${fileName} was not found (looked in ${candidates.join(', ')})`);
}

export function shellWasmPaths(): { runtime: string; grammar: string } {
  return {
    runtime: locateWasm('tree-sitter.wasm', 'web-tree-sitter/tree-sitter.wasm'),
    grammar: locateWasm('tree-sitter-bash.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm'),
  };
}

async function load(): Promise<Parser> {
  // Imported on first load, not with this module: a process that never weighs a command (the CLI
  // printing a step, `--help`) does not pay for the runtime.
  const { Language, Parser } = await import('web-tree-sitter');
  const paths = shellWasmPaths();
  // The bytes are read here rather than by web-tree-sitter, so its own file lookup (URLs, fetch) never
  // matters: the same code works under Node, tsx, and Electron's main process and worker threads.
  await Parser.init({ wasmBinary: fs.readFileSync(paths.runtime) });
  const bash = await Language.load(new Uint8Array(fs.readFileSync(paths.grammar)));
  const parser = new Parser();
  parser.setLanguage(bash);
  return parser;
}

/**
 * Loads the parser once; later calls return the same promise. It never rejects: a failure is kept
 * and every later parse reports it, so a command is then unknowable (never allowed silently).
 */
export function loadShellParser(): Promise<void> {
  if (state.status === 'ready' || state.status === 'failed') return Promise.resolve();
  if (state.status === 'loading') return state.ready;
  const ready = load().then(
    (parser) => {
      state = { status: 'ready', parser };
    },
    (error: unknown) => {
      state = {
        status: 'failed',
        reason: `the shell parser could not be loaded (${error instanceof Error ? error.message : String(error)})`,
      };
    },
  );
  state = { status: 'loading', ready };
  return ready;
}

export function shellParserReady(): boolean {
  return state.status === 'ready';
}

export type ShellParse = { ok: true; tree: Tree } | { ok: false; reason: string };

/** Parses one command line; the caller must `tree.delete()` the result (it lives in WebAssembly memory). */
export function parseShell(text: string): ShellParse {
  if (state.status === 'failed') return { ok: false, reason: state.reason };
  if (state.status !== 'ready') return { ok: false, reason: 'the shell parser is not loaded yet' };
  if (text.length > MAX_SHELL_TEXT) return { ok: false, reason: `the command line is longer than ${MAX_SHELL_TEXT} characters` };
  let tree: Tree | null;
  try {
    tree = state.parser.parse(text);
  } catch (error) {
    return { ok: false, reason: `the shell parser failed (${error instanceof Error ? error.message : String(error)})` };
  }
  if (!tree) return { ok: false, reason: 'the shell parser returned nothing' };
  return { ok: true, tree };
}
