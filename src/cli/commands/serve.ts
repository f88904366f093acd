import type { Command } from 'commander';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import { setPrivateUmask } from '../../fs/file-modes.js';
import { globals, print, untilStopped, withExecutor } from '../cli-context.js';

/** Where `npm run build:renderer` puts the UI, relative to this file in the package. */
export const RENDERER_DIR = path.resolve(import.meta.dirname, '../../../dist-renderer');

/** serve: host the data directory for the browser UI, the CLI and agents until stopped. */
export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description(
      'host this data directory: the web UI on 127.0.0.1 (one-time token in the printed URL), and the local socket for the CLI and agents',
    )
    .option('--port <port>', 'port on 127.0.0.1 (default: a free one)', (value) => Number.parseInt(value, 10))
    .action(async (options: { port?: number }, command: Command) => {
      const { dataDir, json } = globals(command);
      setPrivateUmask();
      if (options.port !== undefined && !(Number.isInteger(options.port) && options.port >= 0 && options.port <= 65535)) {
        throw new Error('--port must be a whole number from 0 to 65535');
      }
      // For tests of big exports without writing 64 MiB: lowers the cap of the one-reply exportAudit.
      const exportCap = Number(process.env.EXECUTOR_MAX_EXPORT_TEXT_BYTES);
      const maxExportTextBytes = Number.isSafeInteger(exportCap) && exportCap > 0 ? exportCap : undefined;
      // EXECUTOR_RENDERER_DIR serves (and builds, when missing or stale) the UI from another folder: tests use it.
      const rendererDir = process.env.EXECUTOR_RENDERER_DIR ? path.resolve(process.env.EXECUTOR_RENDERER_DIR) : RENDERER_DIR;
      const { ensureWebUi } = await import('../web-ui-build.js');
      await ensureWebUi(rendererDir, (line) => process.stderr.write(`${line}\n`));
      // The whole host (Executor, web server, sockets) loads only for this command, not for `--help` or other commands.
      const { startHost } = await import('../../ipc/host/host.js');
      const host = await startHost(dataDir, { web: { port: options.port, rendererDir }, maxExportTextBytes });
      const url = host.web!.issueUrl();
      // Listened for before the announcement: whoever reads it may stop serve at once, and a SIGTERM before the
      // listener would end the process unclosed (killed by the signal).
      const stopped = untilStopped();
      print(json, { url, port: host.web!.port, socketPath: host.socket.socketPath, dataDir: host.executor.dataDir, pid: process.pid }, () =>
        [
          `Executor is serving ${host.executor.dataDir}`,
          `Open this URL in your browser (its token works once; keep it private):`,
          ``,
          `  ${url}`,
          ``,
          `CLI commands for this data directory now go through this host (socket ${host.socket.socketPath}).`,
          `Stop with Ctrl+C.`,
        ].join('\n'),
      );
      await stopped;
      await host.close();
    });

  program
    .command('web-url')
    .description('print a fresh one-time URL for the browser UI of the running `executor serve` (the previous unused URL stops working)')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const { url } = await withExecutor(dataDir, async (api, reach) => {
        if (reach === 'direct')
          throw new ExecutorError('NOT_AVAILABLE', 'No Executor host is running for this data directory; start one with `executor serve`.');
        return api.issueWebUrl();
      });
      print(json, { url }, () => url);
    });
}
