import { ExecutorError } from '../domain/errors.js';

/*
 * better-sqlite3 is a native module: built for one Node (or Electron) ABI on one platform. When its
 * .node file is missing (an install whose build step did not run) or built for another Node, every
 * first `new Database` fails, and the first one is the data-directory lock's. Said as what it is, with
 * how to rebuild, never as a lock file to delete.
 */

/** What a failed load of a native module says, in Node's and `bindings`' words. */
const NATIVE_LOAD_FAILURE =
  /Could not locate the bindings file|better_sqlite3\.node|NODE_MODULE_VERSION|invalid ELF header|wrong ELF class|not a valid Win32 application|Module did not self-register|dlopen/i;

/** The typed error for a native module that did not load, or null when `error` is something else. */
export function nativeModuleFailure(error: unknown): ExecutorError | null {
  if (error instanceof ExecutorError) return null;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code !== 'ERR_DLOPEN_FAILED' && !NATIVE_LOAD_FAILURE.test(message)) return null;
  const firstLine = message.split('\n').find((line) => line.trim() !== '') ?? message;
  return new ExecutorError(
    'NATIVE_MODULE_MISSING',
    `Executor cannot load its SQLite module (better-sqlite3), which is built for one Node version: ${firstLine.trim().slice(0, 300)}. Nothing was changed. ` +
      `Rebuild it for this Node (${process.version}) with \`npm rebuild better-sqlite3\` in Executor's folder (an install that skipped its build scripts lacks it); the desktop app is reinstalled instead.`,
    {
      module: 'better-sqlite3',
      node: process.version,
      abi: process.versions.modules,
      ...(typeof code === 'string' ? { cause: code } : {}),
    },
  );
}
