import type { Command } from 'commander';
import path from 'node:path';
import { sealedKeysError, sealedKeysPresent } from '../audit/keys/key-store.js';
import { visibleJson, visibleOutput } from '../domain/visible-text.js';
import type { ExecutorClient } from '../ipc/client/client.js';
import { defaultDataDir } from '../store/data-dir.js';
import { dataDirNotice, dataDirSource, describeDataDir, type DataDirSource } from './data-dir-notice.js';
import { isNoSpace } from '../store/storage-errors.js';
import { ExecutorError, toErrorShape } from '../domain/errors.js';

interface GlobalOptions {
  dataDir?: string;
  json?: boolean;
}

export function globals(command: Command): { dataDir: string; json: boolean; dataDirSource: DataDirSource } {
  const options = command.optsWithGlobals<GlobalOptions>();
  return { dataDir: options.dataDir ?? defaultDataDir(), json: options.json === true, dataDirSource: dataDirSource(options.dataDir) };
}

/**
 * The one stderr line of a command that adds or lists steps: which data directory, and whether a
 * window shows it (data-dir-notice.ts). Human mode only: --json output stays what scripts parse.
 */
export async function sayDataDir(command: Command, reach: ExecutorReach): Promise<void> {
  const { dataDir, json, dataDirSource: source } = globals(command);
  if (json) return;
  // A data directory's name is the person's, but may still hold a control character: escaped like all output.
  process.stderr.write(`${visibleOutput(dataDirNotice(await describeDataDir(dataDir, source, reach === 'host')))}\n`);
}

/**
 * Every command's output. What it prints may hold text from a step or an agent: control, bidi and
 * invisible characters leave as escapes (visible-text.ts), in JSON as \u escapes of the same value.
 * The printers escape field by field (render.ts); this is the guard for anything they missed.
 */
export function print(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${visibleJson(JSON.stringify(value, null, 2))}\n` : `${visibleOutput(text())}\n`);
}

/** Whether the command talks to a running host (app or `executor serve`) or opened the database itself. */
export type ExecutorReach = 'host' | 'direct';

/**
 * Gives one command the Executor's API on the person's CLI channel. When a host runs for the data
 * directory the calls go to it over the signed socket (it is the one writer); otherwise the command
 * opens the database itself, holding the data-directory lock until it is done.
 */
export async function withExecutor<T>(dataDir: string, work: (api: ExecutorClient, reach: ExecutorReach) => Promise<T>): Promise<T> {
  // Imported here, not at the top: `--help` loads none of this, and a command a host answers loads
  // only the client side (socket, signing, schemas), never the Executor and what it pulls in.
  const { connectToHostIfRunning } = await import('../ipc/transports/node-client.js');
  const remote = await connectToHostIfRunning(dataDir, 'cli');
  if (remote) {
    try {
      return await work(remote, 'host');
    } finally {
      remote.close();
    }
  }
  const [{ Executor }, { localClient }] = await Promise.all([import('../executor/executor.js'), import('../ipc/server/local-client.js')]);
  // A command without a host never starts what it was not asked to (an approved command of another
  // plan, a dry run): what a stopped host left unfinished is taken up by the next host at its start.
  // Every such step can still be rejected or cancelled from here, and expiry still applies.
  const executor = Executor.open(dataDir, { resumeUnfinished: false });
  const api = localClient(executor, 'cli');
  const startedAt = executor.auditHeadSeq();
  try {
    return await work(api, 'direct');
  } catch (error) {
    // A full or damaged data directory names itself (and the WAL a refused write grew is given back now);
    // "nothing was changed" stands only when this command recorded nothing before it failed.
    if (error instanceof ExecutorError && !isNoSpace(error) && !/nothing was changed/i.test(error.message)) throw error;
    const shaped = executor.describeErrorSince(error, startedAt);
    throw new ExecutorError(shaped.code, shaped.message, shaped.details);
  } finally {
    // Background work this command started (an expiry sweep moving a plan on) ends before the lock is let go.
    await executor.settled();
    api.close();
    // A shutdown record refused (a full disk) comes after this command's work: it names that work's steps as recorded.
    const changed = executor.stepsChangedSince(startedAt);
    try {
      executor.close();
    } catch (closeError) {
      if (!(closeError instanceof ExecutorError) || changed.length === 0) throw closeError;
      const listed = changed.map(({ stepId, status }) => `${stepId} (${status})`).join(', ');
      throw new ExecutorError(closeError.code, `${closeError.message} This command's steps, as recorded: ${listed}.`, {
        ...closeError.details,
        changedSteps: changed,
      });
    }
  }
}

/**
 * Keys the desktop app sealed with the OS keychain can only be used through the app. When keys/
 * holds sealed files, the work goes to the running host; with none running, AUDIT_KEY_UNAVAILABLE
 * (and nothing is created). Returns undefined when the keys are plain files the command may read itself.
 */
export async function askHostIfKeysSealed<T>(
  dataDir: string,
  work: (api: ExecutorClient) => Promise<T>,
): Promise<{ value: T } | undefined> {
  const keysDir = path.join(dataDir, 'keys');
  if (!sealedKeysPresent(keysDir)) return undefined;
  const { connectToHostIfRunning } = await import('../ipc/transports/node-client.js');
  const remote = await connectToHostIfRunning(dataDir, 'cli');
  if (!remote) throw sealedKeysError(keysDir);
  try {
    return { value: await work(remote) };
  } finally {
    remote.close();
  }
}

/** Codes and errnos that mean the data directory cannot take a write now: full, read-only, not ours to write. */
function cannotWrite(error: unknown, dataDir: string): boolean {
  if (error instanceof ExecutorError) {
    if (error.code === 'STORAGE_FULL' || error.code === 'STORAGE_FAILED') return true;
    const where = error.details?.path;
    return error.code === 'FILE_NOT_WRITABLE' && typeof where === 'string' && path.resolve(where).startsWith(path.resolve(dataDir));
  }
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(EROFS|EACCES|EPERM|SQLITE_READONLY|SQLITE_CANTOPEN)/.test(code);
}

/**
 * A read the CLI makes itself (`steps list`, `steps show`) still answers when the data directory
 * cannot be written: a full disk, or read-only media (a mounted backup, a snapshot). Opening the
 * Executor writes (its lock's pid file, the app.started record, the shutdown checkpoint), so then the
 * steps are read straight from the database, read-only, without the lock (WAL readers need none) and
 * without writing a byte. Anything else is rethrown.
 */
export async function readEvenWhenFull<T>(
  dataDir: string,
  viaExecutor: () => Promise<T>,
  readOnly: (steps: import('../store/step-repository.js').StepRepository) => T,
): Promise<T> {
  try {
    return await viaExecutor();
  } catch (caught) {
    if (!cannotWrite(caught, dataDir)) throw caught;
    const error = caught instanceof ExecutorError ? caught : new ExecutorError(toErrorShape(caught).code, toErrorShape(caught).message);
    const [{ openDatabase }, { StepRepository }, { loadPolicy }, { BlobStore }] = await Promise.all([
      import('../store/database.js'),
      import('../store/step-repository.js'),
      import('../policy/policy-file.js'),
      import('../backup/blob-store.js'),
    ]);
    let expirySeconds: number | undefined;
    try {
      expirySeconds = loadPolicy(path.resolve(dataDir)).consentExpirySeconds;
    } catch {
      /* the repository's default */
    }
    const refuseWrites = {
      append: () => {
        throw error;
      },
    } as unknown as ConstructorParameters<typeof StepRepository>[1];
    const readFrom = (withoutSharedMemory: boolean): T => {
      const db = openDatabase(path.resolve(dataDir), { readonly: true, withoutSharedMemory });
      try {
        // The backups too: a large write's content is kept there (store/step-bodies.ts); reading it writes nothing.
        const blobs = new BlobStore(path.join(path.resolve(dataDir), 'blobs'));
        return readOnly(new StepRepository(db, refuseWrites, expirySeconds === undefined ? undefined : () => expirySeconds, blobs));
      } finally {
        db.close();
      }
    };
    let value: T;
    try {
      value = readFrom(false);
    } catch (readError) {
      if (readError instanceof ExecutorError) throw readError; // NOT_FOUND for an unknown step id
      // A WAL reader needs the -shm file sized, which a full disk refuses (SQLITE_IOERR_SHMSIZE):
      // read again with the WAL index in memory instead.
      try {
        value = readFrom(true);
      } catch (memoryError) {
        if (memoryError instanceof ExecutorError) throw memoryError;
        throw error;
      }
    }
    process.stderr.write(
      `executor: ${error.message} (The steps were read without opening the Executor: nothing can be decided or run here until it can be written.)\n`,
    );
    return value;
  }
}

/** Resolves on Ctrl+C or SIGTERM: a long-running command (serve, witness serve) then closes what it holds. */
export function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
