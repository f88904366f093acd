let guarded = false;

/**
 * SIGUSR1 (what `process._debugProcess(pid)` sends on POSIX) makes Node open its inspector on
 * 127.0.0.1:9229, and whoever reaches that port runs code in this process. Node 20 has no
 * `--disable-sigusr1`; a listener of our own replaces the default handler, so the signal is
 * logged and ignored. Installed once, when the sandbox first starts a worker. To debug the host,
 * start it with --inspect instead.
 */
export function ignoreInspectorSignal(write: (line: string) => void = (line) => process.stderr.write(line)): void {
  if (guarded || process.platform === 'win32') return;
  guarded = true;
  if (process.execArgv.includes('--disable-sigusr1')) return;
  process.on('SIGUSR1', () => {
    write('executor: ignored SIGUSR1: it would open the inspector of this process to anything on 127.0.0.1.\n');
  });
}
