import { HOST_ORPHAN_SWEEPS } from '../../executor/orphan-sweeps.js';
import { Executor, type ExecutorOptions } from '../../executor/executor.js';
import { failedAfter } from '../../domain/errors.js';
import { connectionLimits, watchDescriptors, type ConnectionLimits } from '../server/connection-limits.js';
import { AgentIdentities } from '../server/agent-identity.js';
import { setPrivateUmask } from '../../fs/file-modes.js';
import { IpcServer, type Credential, type IpcServerOptions } from '../server/server.js';
import { listenOnSocket, socketPathFor, type SocketListener } from '../transports/socket-transport.js';
import { issueSocketCredentials, removeSocketCredentials } from '../server/token-files.js';
import { startWebServer, type WebServer, type WebServerOptions } from '../transports/web-server.js';
import { RunManager, type RunManagerOptions } from '../../runs/run-manager.js';

/**
 * The process that owns a data directory while it runs (the Electron app or `executor serve`):
 * it holds the data-directory lock, so it is the one writer, and it serves everyone else (the CLI,
 * the MCP server, the window, the browser) over the signed protocol.
 */
export interface Host {
  executor: Executor;
  ipc: IpcServer;
  socket: SocketListener;
  web: WebServer | null;
  /** Agent runs (src/runs/): a client of the executor, like the MCP server. */
  runs: RunManager;
  close(): Promise<void>;
}

export interface HostOptions extends IpcServerOptions, ExecutorOptions {
  web?: WebServerOptions;
  /** Extra credentials, e.g. the Electron window's. */
  credentials?: Credential[];
  /** Caps and deadlines for socket and web connections (tests lower them); default: from the open-file limit. */
  connectionLimits?: Partial<ConnectionLimits>;
  /** How agent runs reach their model (the app passes the sealed key store's keys). */
  runs?: RunManagerOptions;
}

export async function startHost(dataDir: string, options: HostOptions = {}): Promise<Host> {
  // A host embedded in some other program still creates its files private (no-op on a worker thread).
  setPrivateUmask();
  const executor = Executor.open(dataDir, {
    openExternal: options.openExternal,
    maxExportTextBytes: options.maxExportTextBytes,
    spawnChild: options.spawnChild,
    keyStore: options.keyStore,
    // A long-lived host under load: no commit of a request copies the WAL back (wal-checkpointer.ts).
    checkpointOffThread: true,
    publishToWitnesses: true,
    // What a host killed mid-write left (a blob no row names) goes at start, and in the background after.
    orphanSweeps: HOST_ORPHAN_SWEEPS,
  });
  let ipc: IpcServer | undefined;
  let socket: SocketListener | undefined;
  // The key kept in Settings (sealed beside the audit keys) unless the caller supplies its own way.
  const runs = new RunManager(executor, { storedApiKey: (provider) => executor.modelApiKey(provider), ...options.runs });
  try {
    // Before the first request can arrive: loaded later, they would stall the requests of the moment.
    await executor.loadHeavyModules();
    // Agent identities outlive a restart: an MCP process that reconnects is still the same agent.
    const agentIdentities = options.agentIdentities ?? AgentIdentities.forDataDir(executor.dataDir);
    ipc = new IpcServer(executor, [...issueSocketCredentials(executor.dataDir), ...(options.credentials ?? [])], {
      ...options,
      agentIdentities,
    });
    ipc.setRuns(runs);
    let web: WebServer | null = null;
    // Out of descriptors on the socket: the person's CLI could not get in, so idle web connections make room.
    socket = await listenOnSocket(ipc, socketPathFor(executor.dataDir), {
      connectionLimits: options.connectionLimits,
      onAcceptFailure: () => web?.shedIdle(),
    });
    web = options.web
      ? await startWebServer(ipc, {
          auditExport: (range) => executor.auditExportLines(range),
          connectionLimits: options.connectionLimits,
          ...options.web,
        })
      : null;
    if (web) {
      ipc.setWebUrlIssuer(() => web.issueUrl());
      ipc.setAuditDownloadIssuer((range) => web.issueDownload(range));
    }
    // Running out of descriptors is mostly silent (see watchDescriptors): watch for it, make room, say so.
    const limits = connectionLimits(options.connectionLimits);
    let lowLoggedAt = -Infinity;
    const stopWatching = watchDescriptors(limits.openFileLimit, (open) => {
      const shed = web?.shedIdle() ?? 0;
      ipc!.auditConnection('descriptorsLow', 'host', '*', { open, openFileLimit: limits.openFileLimit, shed });
      if (Date.now() - lowLoggedAt < 60_000) return;
      lowLoggedAt = Date.now();
      process.stderr.write(
        `executor: running out of file descriptors (${open} open of ${limits.openFileLimit}); closed ${shed} idle web connections. See the audit log (ipc.rejected, descriptorsLow).\n`,
      );
    });
    // Runs a stopped host left go on once the host answers: created ones start, running ones resume, waiting ones wait.
    runs.recover();
    const opened = { executor, ipc, socket, web, runs };
    let closing: Promise<void> | null = null;
    return {
      ...opened,
      close: () =>
        (closing ??= (async () => {
          stopWatching();
          // Every part is closed whatever an earlier one met: a data directory turned read-only (or full,
          // or gone) refuses the token files' removal, and an Executor left open would keep the process
          // alive after its stop signal, holding the lock, until a second signal ends it without a shutdown record.
          const failures: unknown[] = [];
          const attempt = async (part: () => unknown) => {
            try {
              await part();
            } catch (error) {
              failures.push(error);
            }
          };
          // Loops stop without ending their runs: the next host resumes them.
          await attempt(() => runs.close());
          await attempt(() => web?.close());
          await attempt(() => socket!.close());
          await attempt(() => ipc!.close());
          await attempt(() => {
            try {
              removeSocketCredentials(executor.dataDir);
            } catch (error) {
              // Not "nothing was changed": the host ran until now; only its token files stay (the next host replaces them).
              throw failedAfter(
                error,
                `Executor could not remove the token files of its socket in ${executor.dataDir}; the next host replaces them.`,
                {
                  phase: 'shutdown',
                },
              );
            }
          });
          const before = failures.length;
          await attempt(() => executor.close());
          // The Executor's own failure (its shutdown record, naming what was done) says most; else the first.
          if (failures.length) throw failures.length > before ? failures.at(-1) : failures[0];
        })()),
    };
  } catch (error) {
    await runs.close();
    await socket?.close();
    ipc?.close();
    executor.close();
    throw error;
  }
}
